// RUN: not %daphne-opt %s -p canonicalize 2>&1 | FileCheck %s
// Folding an integer division of constants by zero is a compile error at the division's source location (DAPHNE
// reports it while folding); a float division by zero folds to infinity.

func.func @main() {
  %0 = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %1 = "daphne.constant"() <{value = 0.0 : f64}> : () -> f64
  %2 = "daphne.ewDiv"(%0, %1) : (f64, f64) -> f64 loc("s.daph":2:7)
  %3 = "daphne.constant"() <{value = 7 : si64}> : () -> si64
  %4 = "daphne.constant"() <{value = 0 : si64}> : () -> si64
  %5 = "daphne.ewMod"(%3, %4) : (si64, si64) -> si64 loc("s.daph":3:9)
  func.return
}

// CHECK: s.daph:3:9: error: integer modulo by zero in a constant expression
