// RUN: %daphne-opt %s -p fold-transpose | FileCheck %s
// `fold-transpose` reads a transposed matMul operand through the `transa`/`transb` flags instead of building the
// transpose: `t(X) @ X` (syrk in the kernel), `t(X) @ v`, `X @ t(Y)`; a flag already set toggles, a transpose with
// other uses stays for them.

func.func @main(%x: !daphne.Matrix<3x2xf64>, %y: !daphne.Matrix<4x2xf64>, %v: !daphne.Matrix<3x1xf64>, %w: !daphne.Matrix<2x3xf64>) {
  %t = "daphne.constant"() <{value = true}> : () -> i1
  %tx = "daphne.transpose"(%x) : (!daphne.Matrix<3x2xf64>) -> !daphne.Matrix<2x3xf64>
  %0 = "daphne.matMul"(%tx, %x) : (!daphne.Matrix<2x3xf64>, !daphne.Matrix<3x2xf64>) -> !daphne.Matrix<2x2xf64>
  "daphne.print"(%0, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  %1 = "daphne.matMul"(%tx, %v) : (!daphne.Matrix<2x3xf64>, !daphne.Matrix<3x1xf64>) -> !daphne.Matrix<2x1xf64>
  "daphne.print"(%1, %t, %t) : (!daphne.Matrix<2x1xf64>, i1, i1) -> ()
  %ty = "daphne.transpose"(%y) : (!daphne.Matrix<4x2xf64>) -> !daphne.Matrix<2x4xf64>
  %2 = "daphne.matMul"(%x, %ty) : (!daphne.Matrix<3x2xf64>, !daphne.Matrix<2x4xf64>) -> !daphne.Matrix<3x4xf64>
  "daphne.print"(%2, %t, %t) : (!daphne.Matrix<3x4xf64>, i1, i1) -> ()
  %3 = "daphne.matMul"(%tx, %w) <{transb}> : (!daphne.Matrix<2x3xf64>, !daphne.Matrix<2x3xf64>) -> !daphne.Matrix<2x2xf64>
  "daphne.print"(%3, %t, %t) : (!daphne.Matrix<2x2xf64>, i1, i1) -> ()
  "daphne.print"(%ty, %t, %t) : (!daphne.Matrix<2x4xf64>, i1, i1) -> ()
  func.return
}

// CHECK-NOT:  "daphne.transpose"(%x)
// CHECK:      %[[S:.*]] = "daphne.matMul"(%x, %x) <{transa}> : (!daphne.Matrix<3x2xf64>, !daphne.Matrix<3x2xf64>) -> !daphne.Matrix<2x2xf64>
// CHECK:      "daphne.print"(%[[S]],
// CHECK:      %[[G:.*]] = "daphne.matMul"(%x, %v) <{transa}> : (!daphne.Matrix<3x2xf64>, !daphne.Matrix<3x1xf64>) -> !daphne.Matrix<2x1xf64>
// CHECK:      %[[TY:.*]] = "daphne.transpose"(%y)
// CHECK:      %[[B:.*]] = "daphne.matMul"(%x, %y) <{transb}> : (!daphne.Matrix<3x2xf64>, !daphne.Matrix<4x2xf64>) -> !daphne.Matrix<3x4xf64>
// CHECK:      %[[AB:.*]] = "daphne.matMul"(%x, %w) <{transa, transb}> : (!daphne.Matrix<3x2xf64>, !daphne.Matrix<2x3xf64>) -> !daphne.Matrix<2x2xf64>
// CHECK:      "daphne.print"(%[[TY]],
