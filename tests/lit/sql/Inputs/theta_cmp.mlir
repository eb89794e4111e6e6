func.func @main(%l: !daphne.Frame<2x[si64], ["a"]>) {
  %k = "daphne.constant"() <{value = "a"}> : () -> !daphne.String
  %j = "daphne.thetaJoin"(%l, %l, %k, %k) <{cmp = ["Like"], operandSegmentSizes = array<i32: 1, 1, 1, 1>}> : (!daphne.Frame<2x[si64], ["a"]>, !daphne.Frame<2x[si64], ["a"]>, !daphne.String, !daphne.String) -> !daphne.Frame<?x[si64, si64]>
  func.return
}
