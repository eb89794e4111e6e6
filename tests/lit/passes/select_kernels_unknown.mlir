// RUN: not %daphne-opt %s -p select-kernels 2>&1 | FileCheck %s
// A kernel hint naming no kernel of the op is DAPHNE's error (RewriteToCallKernelOpPass).

func.func @bad(%m: !daphne.Matrix<4x3xf64>) -> f64 {
  %0 = "daphne.sumAll"(%m) {kernel_hint = "mySum"} : (!daphne.Matrix<4x3xf64>) -> f64
  func.return %0 : f64
}

// CHECK: error: no kernel found for operation `sumAll` with hinted name `mySum`
