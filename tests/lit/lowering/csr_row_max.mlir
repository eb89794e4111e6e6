// RUN: %daphne-opt %s -p lower-pipeline-to-loops | FileCheck %s
// The connected-components step `aggMax(G * t(c), 0)` over a CSR matrix is one loop nest: per row, a loop over
// the row's stored cells only (row pointers and column indices read from the int32 or int64 view, as the flag
// says) and the product with the broadcast row vector at the cell's column, folded into the row maximum (with
// the implicit zeros as the product's type says: CSR semantics, or the dense fold's first +0.0). A second flag bit
// says every stored value is 1.0 (a pattern graph): then the values are not read at all. A CSR input is passed
// as four slots (`daphne.abi` "csr"): its values, both index views, both row-pointer views and the flags.

func.func @main(%G: !daphne.Matrix<1000x1000xf64:sp[1.000000e-02]:rep[sparse]>, %c: !daphne.Matrix<1x1000xf64:sp[1.000000e+00]>) -> !daphne.Matrix<1000x1xf64> {
  %r = "daphne.vectorizedPipeline"(%G, %c) <{splits = [#builtin.int<1>, #builtin.int<1>], combines = [#builtin.int<1>]}> ({
  ^bb0(%g: !daphne.Matrix<?x1000xf64:sp[1.000000e-02]:rep[sparse]>, %t: !daphne.Matrix<?x1000xf64:sp[1.000000e+00]>):
    %p = "daphne.ewMul"(%g, %t) : (!daphne.Matrix<?x1000xf64:sp[1.000000e-02]:rep[sparse]>, !daphne.Matrix<?x1000xf64:sp[1.000000e+00]>) -> !daphne.Matrix<?x1000xf64:sp[1.000000e-02]:rep[sparse]>
    %m = "daphne.maxRow"(%p) : (!daphne.Matrix<?x1000xf64:sp[1.000000e-02]:rep[sparse]>) -> !daphne.Matrix<?x1xf64>
    "daphne.return"(%m) : (!daphne.Matrix<?x1xf64>) -> ()
  }) : (!daphne.Matrix<1000x1000xf64:sp[1.000000e-02]:rep[sparse]>, !daphne.Matrix<1x1000xf64:sp[1.000000e+00]>) -> !daphne.Matrix<1000x1xf64>
  func.return %r : !daphne.Matrix<1000x1xf64>
}

// CHECK:      "daphne.vectorizedPipeline"
// CHECK:      "daphne.ewMul"
// CHECK-NEXT: "daphne.maxRow"
// CHECK:      {daphne.native_kernel = @[[K:vp_[0-9a-f]+]]}
// CHECK:      builtin.module @[[K]] {
// CHECK-NEXT:   func.func @[[K]](%[[N:.*]]: index, %[[DATA:.*]]: memref<?xf64>, %[[IND32:.*]]: memref<?xi32>, %[[IND64:.*]]: memref<?xi64>, %[[PTR32:.*]]: memref<?xi32>, %[[PTR64:.*]]: memref<?xi64>, %[[WIDE:.*]]: i64, %[[T:.*]]: memref<?xf64>, %[[OUT:.*]]: memref<?xf64>) -> i64 attributes {daphne.task_kernel, daphne.abi = ["rows", "csr", "array", "array"]} {
// CHECK:        %[[W64:.*]] = arith.andi %[[WIDE]], %{{.*}} : i64
// CHECK-NEXT:   %[[IS64:.*]] = arith.cmpi ne, %[[W64]], %{{.*}} : i64
// CHECK-NEXT:   %[[W1:.*]] = arith.andi %[[WIDE]], %{{.*}} : i64
// CHECK-NEXT:   %[[ONES:.*]] = arith.cmpi ne, %[[W1]], %{{.*}} : i64
// CHECK:        scf.for %[[R:.*]] = %{{.*}} to %[[N]]
// CHECK-NEXT:     scf.if %[[IS64]] -> (i64) {
// CHECK-NEXT:       memref.load %[[PTR64]][%[[R]]] : memref<?xi64>
// CHECK:          } else {
// CHECK-NEXT:       memref.load %[[PTR32]][%[[R]]] : memref<?xi32>
// CHECK:          scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}}) -> (f64, {{.*}}i1) {
// CHECK-NEXT:       scf.if %[[IS64]] -> (i64) {
// CHECK-NEXT:         memref.load %[[IND64]][%[[K]]] : memref<?xi64>
// CHECK:            } else {
// CHECK-NEXT:         memref.load %[[IND32]][%[[K]]] : memref<?xi32>
// CHECK:            %[[COL:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NEXT:       %[[G:.*]] = scf.if %[[ONES]] -> (f64) {
// CHECK:            } else {
// CHECK-NEXT:         memref.load %[[DATA]][%[[K]]] : memref<?xf64>
// CHECK:            %[[TC:.*]] = memref.load %[[T]][%[[COL]]] : memref<?xf64>
// CHECK-NEXT:       %[[P:.*]] = arith.mulf %[[G]], %[[TC]] : f64
// CHECK:            arith.select
// CHECK:          memref.store %{{.*}}, %[[OUT]][%[[R]]] : memref<?xf64>
