// RUN: %daphne-opt %s -p canonicalize --print-op-generic | FileCheck %s
// `canonicalize` applies the daphne ops' folds and patterns only: constants stay inside the loop that uses them
// and a loop of one iteration stays a loop (xDSL's scf patterns would hoist and inline them).

func.func @main(%m: !daphne.Matrix<2x2xf64>) {
  %lo = "daphne.constant"() <{value = 0 : index}> : () -> index
  %hi = "daphne.constant"() <{value = 1 : index}> : () -> index
  %r = "scf.for"(%lo, %hi, %hi, %m) ({
  ^bb0(%i: index, %x: !daphne.Matrix<2x2xf64>):
    %c = "daphne.constant"() <{value = 2.0 : f64}> : () -> f64
    %n = "daphne.ewMinus"(%c) : (f64) -> f64
    %y = "daphne.ewMul"(%n, %x) : (f64, !daphne.Matrix<2x2xf64>) -> !daphne.Matrix<2x2xf64>
    "scf.yield"(%y) : (!daphne.Matrix<2x2xf64>) -> ()
  }) : (index, index, index, !daphne.Matrix<2x2xf64>) -> !daphne.Matrix<2x2xf64>
  func.return
}

// CHECK:      "scf.for"
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   "daphne.constant"() <{value = 2.000000e+00 : f64}>
// CHECK-NEXT:   %[[N:[^ ]*]] = "daphne.constant"() <{value = -2.000000e+00 : f64}>
// CHECK-NEXT:   "daphne.ewMul"(%[[N]], %x)
