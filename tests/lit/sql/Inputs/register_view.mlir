func.func @main(%m: !daphne.Matrix<2x2xf64>) {
  %n = "daphne.constant"() <{value = "v"}> : () -> !daphne.String
  "daphne.registerView"(%n, %m) : (!daphne.String, !daphne.Matrix<2x2xf64>) -> ()
  func.return
}
