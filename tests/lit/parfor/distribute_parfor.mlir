// RUN: %daphne-opt %s -p parfor,distribute-parfor | FileCheck %s
// `distribute-parfor` (`--distributed`) attaches to the loop the IR text of `@dist`, what MPI workers run per chunk
// of iterations: the chunk's iteration numbers give the bounds (`daphne.parforChunk`), the result's value before
// the loop and the body's free matrix `%x` are arguments (the loop's own bound `%n` is not), and every result
// returns the cells the chunk changed (`daphne.parforDelta`).

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

// CHECK:      daphne.parfor_shipped = "
// CHECK-SAME: function_type = (!daphne.Matrix<?x1xsi64>, !daphne.Matrix<2x3xf64>, !daphne.Matrix<4x3xf64>) -> (!daphne.Matrix<?x1xsi64>, !daphne.Matrix<?x1xf64>)
// CHECK-SAME: ^bb0(%0: !daphne.Matrix<?x1xsi64> {{.*}}, %1: !daphne.Matrix<2x3xf64> {{.*}}, %2: !daphne.Matrix<4x3xf64>
// CHECK-SAME: %3, %4 = \22daphne.parforChunk\22(%0)
// CHECK-SAME: \22daphne.parfor\22(%3, %4, %5, %1)
// CHECK-SAME: \22daphne.extractCol\22(%2, %i)
// CHECK-SAME: {daphne.in_place}
// CHECK-SAME: \22daphne.parforDelta\22(%res, %1)
// CHECK-SAME: \22func.return\22
