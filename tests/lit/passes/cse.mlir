// RUN: %daphne-opt %s -p cse | FileCheck %s
// `cse` merges identical pure ops (constants, element-wise ops) but never ops with effects (randMatrix).

func.func @main(%m: !daphne.Matrix<2x2xf64>) {
  %0 = "daphne.ewMul"(%m, %m) : (!daphne.Matrix<2x2xf64>, !daphne.Matrix<2x2xf64>) -> !daphne.Matrix<2x2xf64>
  %1 = "daphne.ewMul"(%m, %m) : (!daphne.Matrix<2x2xf64>, !daphne.Matrix<2x2xf64>) -> !daphne.Matrix<2x2xf64>
  %n = "daphne.constant"() <{value = 2 : index}> : () -> index
  %lo = "daphne.constant"() <{value = 0.0 : f64}> : () -> f64
  %hi = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %sp = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %seed = "daphne.constant"() <{value = -1 : si64}> : () -> si64
  %r1 = "daphne.randMatrix"(%n, %n, %lo, %hi, %sp, %seed) : (index, index, f64, f64, f64, si64) -> !daphne.Matrix<2x2xf64>
  %r2 = "daphne.randMatrix"(%n, %n, %lo, %hi, %sp, %seed) : (index, index, f64, f64, f64, si64) -> !daphne.Matrix<2x2xf64>
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%0, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  "daphne.print"(%1, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  "daphne.print"(%r1, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  "daphne.print"(%r2, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  func.return
}

// CHECK:     %[[P:.*]] = "daphne.ewMul"(%m, %m)
// CHECK-NOT: "daphne.ewMul"
// CHECK:     %[[R1:.*]] = "daphne.randMatrix"
// CHECK:     %[[R2:.*]] = "daphne.randMatrix"
// CHECK:     "daphne.print"(%[[P]],
// CHECK:     "daphne.print"(%[[P]],
// CHECK:     "daphne.print"(%[[R1]],
// CHECK:     "daphne.print"(%[[R2]],
