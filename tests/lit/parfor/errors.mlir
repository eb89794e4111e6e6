// RUN: not %daphne-opt %s -p parfor 2>&1 | FileCheck %s
// A carried value the body reads is a dependence between iterations: `parfor` refuses the loop, naming the
// variable (a DaphneDSL script gets it as `file:line:col: error: ...`, tests/parfor/test_parfor.py).

func.func @main(%r: !daphne.Matrix<10x1xf64>, %n: index) {
  %zero = "daphne.constant"() <{value = 0 : index}> : () -> index
  %one = "daphne.constant"() <{value = 1 : index}> : () -> index
  %res = "daphne.parfor"(%zero, %n, %one, %r) ({
  ^bb0(%k: index, %acc: !daphne.Matrix<10x1xf64>):
    %i = "daphne.cast"(%k) <{target_vt = "si64", target_dt = "scalar"}> : (index) -> si64
    %c0 = "daphne.constant"() <{value = 0 : si64}> : () -> si64
    %c1 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %i1 = "daphne.ewAdd"(%i, %c1) : (si64, si64) -> si64
    %s = "daphne.sumAll"(%acc) : (!daphne.Matrix<10x1xf64>) -> f64
    %w = "daphne.insert"(%acc, %s, %i, %i1, %c0, %c1) : (!daphne.Matrix<10x1xf64>, f64, si64, si64, si64, si64) -> !daphne.Matrix<10x1xf64>
    "scf.yield"(%w) : (!daphne.Matrix<10x1xf64>) -> ()
  }) {variables = ["R"]} : (index, index, index, !daphne.Matrix<10x1xf64>) -> !daphne.Matrix<10x1xf64>
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%res, %t, %t) : (!daphne.Matrix<10x1xf64>, i1, i1) -> ()
  func.return
}

// CHECK: parfor iterations are not independent: 'R' is read in the body, while other iterations write it at the same time
