// RUN: %daphne-opt %s -p lower-matmul-to-loops | FileCheck %s
// RUN: %daphne-opt %s -p 'lower-matmul-to-loops{tile=true vec_size_bits=256 fixed_tile_sizes=8,64,32}' | FileCheck %s --check-prefix=TILED
// RUN: %daphne-opt %s -p 'lower-matmul-to-loops{invert_loops=true vec_size_bits=256},convert-to-llvm' | FileCheck %s --check-prefix=LLVM
// `lower-matmul-to-loops` (--codegen): a dense product of one numeric value type gets a kernel module @mm_<hash>
// with a loop nest over flat row-major buffers (sizes are run-time values: m, k, n), and the product names it.
// By default (DAPHNE's naive order) each cell is a dot product carried through the p loop. With tiling, the
// BLIS-order cache tiles (NC = 64 columns, KC = 32 steps, MC = 8 rows) hold register blocks of vector<4xf64>
// accumulators (256 bits); `convert-to-llvm` makes the vectors LLVM vector loads/stores aligned like one element
// and a splat shuffle. Products that keep BLAS say why; a product inside a pipeline is the pipeline's business.

func.func @main(%A: !daphne.Matrix<?x?xf64>, %B: !daphne.Matrix<?x?xf64>, %I: !daphne.Matrix<?x?xsi64>,
                %P: !daphne.Matrix<?x?xi1>) {
  %C = "daphne.matMul"(%A, %B) : (!daphne.Matrix<?x?xf64>, !daphne.Matrix<?x?xf64>) -> !daphne.Matrix<?x?xf64>
  %T = "daphne.matMul"(%A, %B) <{transa}> : (!daphne.Matrix<?x?xf64>, !daphne.Matrix<?x?xf64>) -> !daphne.Matrix<?x?xf64>
  %M = "daphne.matMul"(%A, %I) : (!daphne.Matrix<?x?xf64>, !daphne.Matrix<?x?xsi64>) -> !daphne.Matrix<?x?xf64>
  %Q = "daphne.matMul"(%P, %P) : (!daphne.Matrix<?x?xi1>, !daphne.Matrix<?x?xi1>) -> !daphne.Matrix<?x?xi1>
  %H = "daphne.matMul"(%A, %B) {kernel = "_matMul__DenseMatrix_double__DenseMatrix_double__DenseMatrix_double__bool__bool"} : (!daphne.Matrix<?x?xf64>, !daphne.Matrix<?x?xf64>) -> !daphne.Matrix<?x?xf64>
  func.return
}

// CHECK:      "daphne.matMul"(%A, %B) {daphne.native_kernel = @[[K:mm_[0-9a-f]+]]}
// CHECK-NEXT: "daphne.matMul"(%A, %B) <{transa}> {daphne.native_kernel = @[[KT:mm_[0-9a-f]+]]}
// CHECK-NEXT: "daphne.matMul"(%A, %I) {daphne.native = "fallback: mixed value types"}
// CHECK-NEXT: "daphne.matMul"(%P, %P) {daphne.native = "fallback: value type bool"}
// CHECK-NEXT: "daphne.matMul"(%A, %B) {kernel = {{.*}}, daphne.native = "fallback: a kernel hint or extension names its kernel"}
// CHECK:      builtin.module @[[K]] {
// CHECK-NEXT:   func.func @[[K]](%[[M:.*]]: index, %{{.*}}: i64, %{{.*}}: i64, %[[A:.*]]: memref<?xf64>, %[[B:.*]]: memref<?xf64>, %[[C:.*]]: memref<?xf64>) -> i64 attributes {daphne.task_kernel, daphne.abi = ["rows", "i64", "i64", "array", "array", "array"]}
// CHECK:          scf.for %[[I:.*]] = %{{.*}} to %[[M]] step
// CHECK:            scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:              %[[DOT:.*]] = scf.for %{{.*}} = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CHECK:                memref.load %[[A]]
// CHECK:                memref.load %[[B]]
// CHECK:                %[[PROD:.*]] = arith.mulf
// CHECK-NEXT:           %[[SUM:.*]] = arith.addf %[[ACC]], %[[PROD]] : f64
// CHECK-NEXT:           scf.yield %[[SUM]] : f64
// CHECK:              memref.store %[[DOT]], %[[C]]
// CHECK:      builtin.module @[[KT]] {
// CHECK-NOT:  builtin.module

// TILED:      builtin.module @[[K:mm_[0-9a-f]+]] {
// TILED:        scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// TILED:          memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf64>
// TILED:        scf.for %[[J0:.*]] = %{{.*}} to %[[N:.*]] step %[[NC:.*]] {
// TILED:          scf.for %[[P0:.*]] = %{{.*}} to %{{.*}} step %[[KC:.*]] {
// TILED:            scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step %[[MC:.*]] {
// TILED:              vector.load %{{.*}}[%{{.*}}] : memref<?xf64>, vector<4xf64>
// TILED:              scf.for {{.*}} iter_args({{.*}}) -> (vector<4xf64>, vector<4xf64>, vector<4xf64>, vector<4xf64>) {
// TILED:                vector.broadcast %{{.*}} : f64 to vector<4xf64>
// TILED:                arith.mulf %{{.*}}, %{{.*}} : vector<4xf64>
// TILED:                arith.addf %{{.*}}, %{{.*}} : vector<4xf64>
// TILED:              vector.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf64>, vector<4xf64>

// LLVM:       llvm.func @[[K:mm_[0-9a-f]+]](%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.noalias}) -> i64
// LLVM:         %[[A:.*]] = llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0] : vector<4xf64>
// LLVM:         %[[C:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> vector<4xf64>
// LLVM:         %[[B:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> vector<4xf64>
// LLVM:         %[[P:.*]] = llvm.fmul %[[A]], %[[B]] : vector<4xf64>
// LLVM-NEXT:    %[[S:.*]] = llvm.fadd %[[C]], %[[P]] : vector<4xf64>
// LLVM:         llvm.store %[[S]], %{{.*}} {alignment = 8 : i64} : vector<4xf64>, !llvm.ptr
// LLVM:       llvm.func @[[K]]_py(
