func.func @main(%c: !daphne.Column<3xf64>) {
  %p = "daphne.colProject"(%c, %c) : (!daphne.Column<3xf64>, !daphne.Column<3xf64>) -> !daphne.Column<3xf64>
  func.return
}
