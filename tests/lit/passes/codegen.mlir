// RUN: %daphne-opt %s -p codegen | FileCheck %s
// `codegen` (--codegen) fuses element-wise ops and aggregations outside vectorized pipelines into pipelines marked
// `daphne.codegen` (compiled by the kernel stages, run as one call); a scalar op stays outside.

func.func @main(%m: !daphne.Matrix<4x3xf64>, %x: f64) {
  %0 = "daphne.ewMul"(%m, %x) : (!daphne.Matrix<4x3xf64>, f64) -> !daphne.Matrix<4x3xf64>
  %1 = "daphne.ewAbs"(%0) : (!daphne.Matrix<4x3xf64>) -> !daphne.Matrix<4x3xf64>
  %2 = "daphne.sumAll"(%1) : (!daphne.Matrix<4x3xf64>) -> f64
  %3 = "daphne.ewAdd"(%2, %x) : (f64, f64) -> f64
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%3, %t, %t) : (f64, i1, i1) -> ()
  func.return
}

// CHECK:      %[[P:.*]] = "daphne.vectorizedPipeline"(%m, %x)
// CHECK:        "daphne.ewMul"
// CHECK-NEXT:   "daphne.ewAbs"
// CHECK-NEXT:   "daphne.sumAll"
// CHECK:      }) {daphne.codegen} : (!daphne.Matrix<4x3xf64>, f64) -> f64
// CHECK-NEXT: "daphne.ewAdd"(%[[P]], %x) : (f64, f64) -> f64
