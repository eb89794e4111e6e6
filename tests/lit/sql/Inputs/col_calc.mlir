func.func @main(%c: !daphne.Column<3xf64>, %d: !daphne.Column<2xf64>) {
  %p = "daphne.colCalcSub"(%c, %d) : (!daphne.Column<3xf64>, !daphne.Column<2xf64>) -> !daphne.Column<3xf64>
  func.return
}
