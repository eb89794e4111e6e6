// RUN: %daphne-opt %s -p canonicalize | FileCheck %s
// `t(X) @ X` becomes `syrk(X)` (DAPHNE's MatMulOp canonicalization), computed as an exactly symmetric product; a
// product of a transpose with another matrix stays a `matMul`.

func.func @main(%x: !daphne.Matrix<100x3xf64>, %y: !daphne.Matrix<100x3xf64>) {
  %t = "daphne.transpose"(%x) : (!daphne.Matrix<100x3xf64>) -> !daphne.Matrix<3x100xf64>
  %p = "daphne.matMul"(%t, %x) : (!daphne.Matrix<3x100xf64>, !daphne.Matrix<100x3xf64>) -> !daphne.Matrix<3x3xf64>
  %q = "daphne.matMul"(%t, %y) : (!daphne.Matrix<3x100xf64>, !daphne.Matrix<100x3xf64>) -> !daphne.Matrix<3x3xf64>
  %b = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%p, %b, %b) : (!daphne.Matrix<3x3xf64>, i1, i1) -> ()
  "daphne.print"(%q, %b, %b) : (!daphne.Matrix<3x3xf64>, i1, i1) -> ()
  func.return
}

// CHECK:      %[[T:.*]] = "daphne.transpose"(%x)
// CHECK:      %[[P:.*]] = "daphne.syrk"(%x) : (!daphne.Matrix<100x3xf64>) -> !daphne.Matrix<3x3xf64>
// CHECK-NEXT: %[[Q:.*]] = "daphne.matMul"(%[[T]], %y)
// CHECK:      "daphne.print"(%[[P]],
// CHECK:      "daphne.print"(%[[Q]],
