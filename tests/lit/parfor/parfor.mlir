// RUN: %daphne-opt %s -p parfor | FileCheck %s
// `parfor` accepts a loop whose carried value is only written at the column the loop variable selects (here
// through an `if`, and once more in the same column), marks those inserts `daphne.in_place` and records what an
// iteration writes on the loop; the inserts into a local matrix keep copying.

func.func @main(%x: !daphne.Matrix<4x3xf64>, %r: !daphne.Matrix<2x3xf64>, %n: index) {
  %zero = "daphne.constant"() <{value = 0 : index}> : () -> index
  %one = "daphne.constant"() <{value = 1 : index}> : () -> index
  %res = "daphne.parfor"(%zero, %n, %one, %r) ({
  ^bb0(%k: index, %acc: !daphne.Matrix<2x3xf64>):
    %i = "daphne.cast"(%k) <{target_vt = "si64", target_dt = "scalar"}> : (index) -> si64
    %c0 = "daphne.constant"() <{value = 0 : si64}> : () -> si64
    %c1 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %c2 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %i1 = "daphne.ewAdd"(%i, %c1) : (si64, si64) -> si64
    %col = "daphne.extractCol"(%x, %i) : (!daphne.Matrix<4x3xf64>, si64) -> !daphne.Matrix<4x1xf64>
    %s = "daphne.sumAll"(%col) : (!daphne.Matrix<4x1xf64>) -> f64
    %local = "daphne.insert"(%col, %s, %c0, %c1, %c0, %c1) : (!daphne.Matrix<4x1xf64>, f64, si64, si64, si64, si64) -> !daphne.Matrix<4x1xf64>
    %m = "daphne.maxAll"(%local) : (!daphne.Matrix<4x1xf64>) -> f64
    %big = "daphne.ewGt"(%s, %m) : (f64, f64) -> si64
    %b = "daphne.cast"(%big) <{target_vt = "bool", target_dt = "scalar"}> : (si64) -> i1
    %w1 = "scf.if"(%b) ({
      %t = "daphne.insert"(%acc, %s, %c0, %c1, %i, %i1) : (!daphne.Matrix<2x3xf64>, f64, si64, si64, si64, si64) -> !daphne.Matrix<2x3xf64>
      "scf.yield"(%t) : (!daphne.Matrix<2x3xf64>) -> ()
    }, {
      "scf.yield"(%acc) : (!daphne.Matrix<2x3xf64>) -> ()
    }) : (i1) -> !daphne.Matrix<2x3xf64>
    %w2 = "daphne.insert"(%w1, %m, %c1, %c2, %i, %i1) : (!daphne.Matrix<2x3xf64>, f64, si64, si64, si64, si64) -> !daphne.Matrix<2x3xf64>
    "scf.yield"(%w2) : (!daphne.Matrix<2x3xf64>) -> ()
  }) {variables = ["R"]} : (index, index, index, !daphne.Matrix<2x3xf64>) -> !daphne.Matrix<2x3xf64>
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%res, %t, %t) : (!daphne.Matrix<2x3xf64>, i1, i1) -> ()
  func.return
}

// CHECK:      %res = daphne.parfor %k = %zero to %n step %one iter_args(%acc = %r) -> (!daphne.Matrix<2x3xf64>) {
// CHECK:        %local = "daphne.insert"(%col, %s, %c0, %c1, %c0, %c1) : (!daphne.Matrix<4x1xf64>
// CHECK:        scf.if
// CHECK-NEXT:     "daphne.insert"(%acc, %s, %c0, %c1, %i, %i1) {daphne.in_place} : (!daphne.Matrix<2x3xf64>
// CHECK:        "daphne.insert"(%w1, %m, %c1, %c2, %i, %i1) {daphne.in_place} : (!daphne.Matrix<2x3xf64>
// CHECK:      } {variables = ["R"], daphne.parfor_writes = ["R[_, i]"]}
