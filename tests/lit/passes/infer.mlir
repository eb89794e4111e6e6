// RUN: %daphne-opt %s -p infer | FileCheck %s
// `infer` applies each op's type rules: promotion (si64 + f64 -> f64), comparisons keep the operand type,
// shapes flow through fill/transpose/row aggregation, and loop-carried values are generalised to a fixpoint.

func.func @main() {
  %0 = "daphne.constant"() <{value = 3 : si64}> : () -> si64
  %1 = "daphne.constant"() <{value = 2.5 : f64}> : () -> f64
  %2 = "daphne.ewAdd"(%0, %1) : (si64, f64) -> !daphne.Unknown
  %3 = "daphne.ewLt"(%0, %1) : (si64, f64) -> !daphne.Unknown
  %4 = "daphne.fill"(%1, %0, %0) : (f64, si64, si64) -> !daphne.Unknown
  %5 = "daphne.transpose"(%4) : (!daphne.Unknown) -> !daphne.Unknown
  %6 = "daphne.sumRow"(%5) : (!daphne.Unknown) -> !daphne.Unknown
  %7 = "daphne.meanAll"(%6) : (!daphne.Unknown) -> !daphne.Unknown
  func.return
}

// CHECK: "daphne.ewAdd"(%0, %1) : (si64, f64) -> f64
// CHECK: "daphne.ewLt"(%0, %1) : (si64, f64) -> f64
// CHECK: "daphne.fill"(%1, %0, %0) : (f64, si64, si64) -> !daphne.Matrix<3x3xf64>
// CHECK: "daphne.transpose"(%4) : (!daphne.Matrix<3x3xf64>) -> !daphne.Matrix<3x3xf64>
// CHECK: "daphne.sumRow"(%5) : (!daphne.Matrix<3x3xf64>) -> !daphne.Matrix<3x1xf64>
// CHECK: "daphne.meanAll"(%6) : (!daphne.Matrix<3x1xf64>) -> f64
