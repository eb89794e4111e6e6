// RUN: %daphne-opt %s -p lower-pipeline-to-loops | FileCheck %s
// `sum((a - b) ^ 2 * c)`: a fused element-wise chain ending in a full sum becomes one flat loop over n * C cells
// in the pipeline's kernel module `@vp_<hash>`, which the pipeline names. Inputs and the one-cell partial result
// are memrefs (the calling convention, `daphne.abi`), `^ 2` is a multiplication guarded by an exponent check, the
// f64 sum is reassociable (fastmath) so LLVM vectorises it, and the kernel returns its error status.

func.func @main(%a: !daphne.Matrix<100x4xf64>, %b: !daphne.Matrix<100x4xf64>, %c: !daphne.Matrix<100x4xf64>) -> f64 {
  %r = "daphne.vectorizedPipeline"(%a, %b, %c) <{splits = [#builtin.int<1>, #builtin.int<1>, #builtin.int<1>], combines = [#builtin.int<3>]}> ({
  ^bb0(%x: !daphne.Matrix<?x4xf64>, %y: !daphne.Matrix<?x4xf64>, %z: !daphne.Matrix<?x4xf64>):
    %d = "daphne.ewSub"(%x, %y) : (!daphne.Matrix<?x4xf64>, !daphne.Matrix<?x4xf64>) -> !daphne.Matrix<?x4xf64>
    %two = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %sq = "daphne.ewPow"(%d, %two) : (!daphne.Matrix<?x4xf64>, si64) -> !daphne.Matrix<?x4xf64>
    %p = "daphne.ewMul"(%sq, %z) : (!daphne.Matrix<?x4xf64>, !daphne.Matrix<?x4xf64>) -> !daphne.Matrix<?x4xf64>
    %s = "daphne.sumAll"(%p) : (!daphne.Matrix<?x4xf64>) -> f64
    "daphne.return"(%s) : (f64) -> ()
  }) : (!daphne.Matrix<100x4xf64>, !daphne.Matrix<100x4xf64>, !daphne.Matrix<100x4xf64>) -> f64
  func.return %r : f64
}

// CHECK:      func.func @main(
// CHECK:      "daphne.vectorizedPipeline"
// CHECK:      }) {daphne.native_kernel = @[[K:vp_[0-9a-f]+]]}
// CHECK:      builtin.module @[[K]] {
// CHECK-NEXT:   func.func @[[K]](%[[N:.*]]: index, %[[A:.*]]: memref<?xf64>, %[[B:.*]]: memref<?xf64>, %[[C:.*]]: memref<?xf64>, %[[OUT:.*]]: memref<?xf64>) -> i64 attributes {daphne.task_kernel, daphne.abi = ["rows", "array", "array", "array", "array"]} {
// CHECK:        %[[CELLS:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK:        %[[SUM:.*]], %[[ERR:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[CELLS]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %{{.*}} = %{{.*}}) -> (f64, i1) {
// CHECK-NEXT:     %[[X:.*]] = memref.load %[[A]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:     %[[Y:.*]] = memref.load %[[B]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:     %[[D:.*]] = arith.subf %[[X]], %[[Y]] : f64
// CHECK-NEXT:     %[[BAD:.*]] = arith.cmpf une, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:     %[[SQ:.*]] = arith.mulf %[[D]], %[[D]] : f64
// CHECK-NEXT:     %[[Z:.*]] = memref.load %[[C]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[SQ]], %[[Z]] : f64
// CHECK-NEXT:     %[[NEW:.*]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,nsz> : f64
// CHECK:          scf.yield %[[NEW]], %{{.*}} : f64, i1
// CHECK:        }
// CHECK:        memref.store %{{.*}}, %[[OUT]][%{{.*}}] : memref<?xf64>
// CHECK:        func.return %{{.*}} : i64
