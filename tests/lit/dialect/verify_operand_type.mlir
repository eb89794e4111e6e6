// RUN: not %daphne-opt %s 2>&1 | FileCheck %s
// An operand of the wrong data type violates the op's IRDL constraint; the error names the op and the argument
// as DaphneDSL users know them, not IRDL's operand position.

func.func @main(%s: si64) {
  %0 = "daphne.sumRow"(%s) : (si64) -> !daphne.Matrix<?x1xsi64>
  func.return
}

// CHECK: daphne.sumRow: the aggregated argument must be a matrix or a frame, got si64
