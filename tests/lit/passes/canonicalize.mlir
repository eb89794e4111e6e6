// RUN: %daphne-opt %s -p canonicalize | FileCheck %s
// `canonicalize` folds constant scalar ops with the runtime's own kernels (si64 wraps around, 7 / 2 truncates),
// removes casts to the same type and `x * 1`, folds shape queries of known shapes and turns string `+` into
// `ewConcat`.

func.func @main(%m: !daphne.Matrix<4x3xf64>, %x: f64, %s: !daphne.String) {
  %0 = "daphne.constant"() <{value = 9223372036854775807 : si64}> : () -> si64
  %1 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
  %2 = "daphne.ewAdd"(%0, %1) : (si64, si64) -> si64
  %3 = "daphne.constant"() <{value = 7 : si64}> : () -> si64
  %4 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
  %5 = "daphne.ewDiv"(%3, %4) : (si64, si64) -> si64
  %6 = "daphne.cast"(%x) <{target_vt = "f64"}> : (f64) -> f64
  %7 = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %8 = "daphne.ewMul"(%6, %7) : (f64, f64) -> f64
  %9 = "daphne.numRows"(%m) : (!daphne.Matrix<4x3xf64>) -> index
  %10 = "daphne.ewAdd"(%s, %s) : (!daphne.String, !daphne.String) -> !daphne.String
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%2, %t, %t) : (si64, i1, i1) -> ()
  "daphne.print"(%5, %t, %t) : (si64, i1, i1) -> ()
  "daphne.print"(%8, %t, %t) : (f64, i1, i1) -> ()
  "daphne.print"(%9, %t, %t) : (index, i1, i1) -> ()
  "daphne.print"(%10, %t, %t) : (!daphne.String, i1, i1) -> ()
  func.return
}

// CHECK-DAG: %[[MIN:.*]] = "daphne.constant"() <{value = -9223372036854775808 : si64}> : () -> si64
// CHECK-DAG: %[[Q:.*]] = "daphne.constant"() <{value = 3 : si64}> : () -> si64
// CHECK-DAG: %[[R:.*]] = "daphne.constant"() <{value = 4 : index}> : () -> index
// CHECK-DAG: %[[CAT:.*]] = "daphne.ewConcat"(%s, %s) : (!daphne.String, !daphne.String) -> !daphne.String
// CHECK:     "daphne.print"(%[[MIN]], %{{.*}}, %{{.*}})
// CHECK:     "daphne.print"(%[[Q]], %{{.*}}, %{{.*}})
// CHECK:     "daphne.print"(%x, %{{.*}}, %{{.*}})
// CHECK:     "daphne.print"(%[[R]], %{{.*}}, %{{.*}})
// CHECK:     "daphne.print"(%[[CAT]], %{{.*}}, %{{.*}})
