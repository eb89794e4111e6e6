// RUN: %daphne-opt %s -p lower-pipeline-to-loops | FileCheck %s
// `sum(X - aggMax(X, 0), 1)`: row aggregates, column broadcasting and column aggregates need (row, column)
// coordinates: a loop over the rows, one inner loop for the row maximum (the exact fold from column 0: a NaN
// there wins), and one inner loop over the columns for the cells of the result and the column sums (accumulated
// in the output, from the batch's first row).

func.func @main(%X: !daphne.Matrix<50x6xf64>) -> !daphne.Matrix<1x6xf64> {
  %r = "daphne.vectorizedPipeline"(%X) <{splits = [#builtin.int<1>], combines = [#builtin.int<3>]}> ({
  ^bb0(%x: !daphne.Matrix<?x6xf64>):
    %m = "daphne.maxRow"(%x) : (!daphne.Matrix<?x6xf64>) -> !daphne.Matrix<?x1xf64>
    %y = "daphne.ewSub"(%x, %m) : (!daphne.Matrix<?x6xf64>, !daphne.Matrix<?x1xf64>) -> !daphne.Matrix<?x6xf64>
    %s = "daphne.sumCol"(%y) : (!daphne.Matrix<?x6xf64>) -> !daphne.Matrix<1x6xf64>
    "daphne.return"(%s) : (!daphne.Matrix<1x6xf64>) -> ()
  }) : (!daphne.Matrix<50x6xf64>) -> !daphne.Matrix<1x6xf64>
  func.return %r : !daphne.Matrix<1x6xf64>
}

// CHECK:      "daphne.vectorizedPipeline"
// CHECK:      {daphne.native_kernel = @[[K:vp_[0-9a-f]+]]}
// CHECK:      builtin.module @[[K]] {
// CHECK-NEXT:   func.func @[[K]](%[[N:.*]]: index, %[[X:.*]]: memref<?xf64>, %[[OUT:.*]]: memref<?xf64>) -> i64
// CHECK:        scf.for %[[R:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i1) {
// CHECK-NEXT:     %[[ROW:.*]] = arith.muli %[[R]], %{{.*}} : index
// CHECK-NEXT:     %[[AT0:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// CHECK-NEXT:     %[[X0:.*]] = memref.load %[[X]][%[[AT0]]] : memref<?xf64>
// CHECK-NEXT:     %[[MAX:.*]], %{{.*}} = scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %[[X0]], %{{.*}} = %{{.*}}) -> (f64, i1) {
// CHECK:            %[[LT:.*]] = arith.cmpf olt, %[[M]], %{{.*}} : f64
// CHECK-NEXT:       arith.select %[[LT]]
// CHECK:          scf.for %[[C2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i1) {
// CHECK:            %[[D:.*]] = arith.subf %{{.*}}, %[[MAX]] : f64
// CHECK:            %[[OLD:.*]] = memref.load %[[OUT]][%[[C2]]] : memref<?xf64>
// CHECK-NEXT:       %[[NEW:.*]] = arith.addf %[[OLD]], %[[D]] : f64
// CHECK-NEXT:       %[[FIRST:.*]] = arith.cmpi eq, %[[R]], %{{.*}} : index
// CHECK-NEXT:       %[[V:.*]] = arith.select %[[FIRST]], %[[D]], %[[NEW]] : f64
// CHECK-NEXT:       memref.store %[[V]], %[[OUT]][%[[C2]]] : memref<?xf64>
