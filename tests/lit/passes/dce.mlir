// RUN: %daphne-opt %s -p dce | FileCheck %s
// `dce` drops pure ops whose results are unused; prints and stops (effects) stay.

func.func @main(%m: !daphne.Matrix<2x2xf64>) {
  %0 = "daphne.transpose"(%m) : (!daphne.Matrix<2x2xf64>) -> !daphne.Matrix<2x2xf64>
  %1 = "daphne.sumAll"(%m) : (!daphne.Matrix<2x2xf64>) -> f64
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%1, %t, %t) : (f64, i1, i1) -> ()
  func.return
}

// CHECK-NOT: daphne.transpose
// CHECK:     %[[S:.*]] = "daphne.sumAll"(%m)
// CHECK:     "daphne.print"(%[[S]],
