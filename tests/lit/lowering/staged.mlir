// RUN: %daphne-opt %s -p lower-pipeline-to-loops | FileCheck %s
// Ops whose results numpy (or BLAS) computes are *opaque*: their runtime kernel runs on the batch between native
// stages. `sum(exp(X * 2.0 - 1.0) @ W)`: stage 0 writes X * 2.0 - 1.0, numpy's exp and the matMul run on the
// batch, and stage 2 (after the two opaque levels) sums the product; each stage is one kernel function of the
// pipeline's kernel module, which the pipeline names together with its opaque ops.

func.func @main(%X: !daphne.Matrix<100x4xf64>, %W: !daphne.Matrix<4x3xf64>) -> f64 {
  %r = "daphne.vectorizedPipeline"(%X, %W) <{splits = [#builtin.int<1>, #builtin.int<0>], combines = [#builtin.int<3>]}> ({
  ^bb0(%x: !daphne.Matrix<?x4xf64>, %w: !daphne.Matrix<4x3xf64>):
    %two = "daphne.constant"() <{value = 2.000000e+00 : f64}> : () -> f64
    %a = "daphne.ewMul"(%x, %two) : (!daphne.Matrix<?x4xf64>, f64) -> !daphne.Matrix<?x4xf64>
    %one = "daphne.constant"() <{value = 1.000000e+00 : f64}> : () -> f64
    %b = "daphne.ewSub"(%a, %one) : (!daphne.Matrix<?x4xf64>, f64) -> !daphne.Matrix<?x4xf64>
    %e = "daphne.ewExp"(%b) : (!daphne.Matrix<?x4xf64>) -> !daphne.Matrix<?x4xf64>
    %m = "daphne.matMul"(%e, %w) : (!daphne.Matrix<?x4xf64>, !daphne.Matrix<4x3xf64>) -> !daphne.Matrix<?x3xf64>
    %s = "daphne.sumAll"(%m) : (!daphne.Matrix<?x3xf64>) -> f64
    "daphne.return"(%s) : (f64) -> ()
  }) : (!daphne.Matrix<100x4xf64>, !daphne.Matrix<4x3xf64>) -> f64
  func.return %r : f64
}

// CHECK:      "daphne.vectorizedPipeline"
// CHECK:      }) {daphne.native_kernel = @[[K:vp_[0-9a-f]+]], daphne.opaque = ["daphne.ewExp", "daphne.matMul"]}
// CHECK:      builtin.module @[[K]] {
// CHECK-NEXT:   func.func @[[K]]_s0(%{{.*}}: index, %[[X:.*]]: memref<?xf64>, %{{.*}}: memref<?xf64>, %[[M:.*]]: memref<?xf64>) -> i64
// CHECK:          memref.load %[[X]]
// CHECK:          arith.mulf
// CHECK:          arith.subf
// CHECK:          memref.store %{{.*}}, %[[M]]
// CHECK:        func.func @[[K]]_s2(%{{.*}}: index, %{{.*}}: memref<?xf64>, %{{.*}}: memref<?xf64>, %[[EXP:.*]]: memref<?xf64>, %[[MM:.*]]: memref<?xf64>, %[[OUT:.*]]: memref<?xf64>) -> i64
// CHECK-SAME:     daphne.abi = ["rows", "array", "array", "array", "array", "array"]
// CHECK:          memref.load %[[MM]]
// CHECK:          arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,nsz> : f64
// CHECK:          memref.store %{{.*}}, %[[OUT]]
