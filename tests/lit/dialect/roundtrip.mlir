// RUN: %daphne-opt %s --print-op-generic > %t.1.mlir
// RUN: %daphne-opt %t.1.mlir --print-op-generic > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: FileCheck %s < %t.1.mlir
// Every daphne type and a sample of ops print and parse back to identical text.

func.func @main(%m: !daphne.Matrix<?x3xsi64:rep[sparse]>, %f: !daphne.Frame<2x[f64, !daphne.String], ["a", "b"]>, %l: !daphne.List<!daphne.Matrix<?x?xf64>>, %u: !daphne.Unknown) {
  %0 = "daphne.constant"() <{value = "x\n\"y\""}> : () -> !daphne.String
  %1 = "daphne.constant"() <{value = 0x7FF8000000000000 : f64}> : () -> f64
  %2 = "daphne.cast"(%m) <{target_vt = "f64"}> : (!daphne.Matrix<?x3xsi64:rep[sparse]>) -> !daphne.Matrix<?x3xf64:rep[sparse]>
  %3 = "daphne.numRows"(%f) : (!daphne.Frame<2x[f64, !daphne.String], ["a", "b"]>) -> index
  func.return
}

// CHECK: !daphne.Matrix<?x3xsi64:rep[sparse]>
// CHECK: !daphne.Frame<2x[f64, !daphne.String], ["a", "b"]>
// CHECK: !daphne.List<!daphne.Matrix<?x?xf64>>
// CHECK: !daphne.Unknown
