// RUN: %daphne-opt %s -p select-kernels | FileCheck %s
// `select-kernels` honours a kernel hint that names an op's kernel by DAPHNE's naming scheme
// (`_<op>__<result types>__<operand types>`) by recording it as the op's `kernel`; ops without hints are unchanged.

func.func @main(%m: !daphne.Matrix<4x3xf64>, %x: si64) {
  %0 = "daphne.sumAll"(%m) {kernel_hint = "_sumAll__double__DenseMatrix_double"} : (!daphne.Matrix<4x3xf64>) -> f64
  %1 = "daphne.sumAll"(%m) : (!daphne.Matrix<4x3xf64>) -> f64
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%x, %t, %t) {kernel_hint = "_print__int64_t__bool__bool"} : (si64, i1, i1) -> ()
  "daphne.print"(%0, %t, %t) : (f64, i1, i1) -> ()
  "daphne.print"(%1, %t, %t) : (f64, i1, i1) -> ()
  func.return
}

// CHECK:      "daphne.sumAll"(%m) {kernel_hint = "_sumAll__double__DenseMatrix_double", kernel = "_sumAll__double__DenseMatrix_double"}
// CHECK-NEXT: "daphne.sumAll"(%m) : (!daphne.Matrix<4x3xf64>) -> f64
// CHECK:      "daphne.print"(%x, %{{.*}}, %{{.*}}) {kernel_hint = "_print__int64_t__bool__bool", kernel = "_print__int64_t__bool__bool"}
