// RUN: not %daphne-opt %s 2>&1 | FileCheck %s
// The matmul verifier rejects inner dimensions that cannot match.

func.func @main(%a: !daphne.Matrix<2x3xf64>, %b: !daphne.Matrix<2x3xf64>) {
  %0 = "daphne.matMul"(%a, %b) : (!daphne.Matrix<2x3xf64>, !daphne.Matrix<2x3xf64>) -> !daphne.Matrix<2x3xf64>
  func.return
}

// CHECK: daphne.matMul: shape mismatch: lhs 2x3, rhs 2x3
