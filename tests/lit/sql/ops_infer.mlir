// RUN: %daphne-opt %s -p infer | FileCheck %s
// Type and label inference of the relational and columnar ops, and the Column type's syntax.

func.func @main(%l: !daphne.Frame<4x[si64, !daphne.String], ["l.k", "l.s"]>, %r: !daphne.Frame<2x[si64], ["r.k"]>,
                %c: !daphne.Column<4xf64>, %m: !daphne.Matrix<4x1xsi64>) {
  %lk = "daphne.constant"() <{value = "l.k"}> : () -> !daphne.String
  %rk = "daphne.constant"() <{value = "r.k"}> : () -> !daphne.String
  %j = "daphne.thetaJoin"(%l, %r, %lk, %lk, %rk, %rk) <{cmp = ["LessThan", "NotEqual"], operandSegmentSizes = array<i32: 1, 1, 2, 2>}> : (!daphne.Frame<4x[si64, !daphne.String], ["l.k", "l.s"]>, !daphne.Frame<2x[si64], ["r.k"]>, !daphne.String, !daphne.String, !daphne.String, !daphne.String) -> !daphne.Unknown
  %i = "daphne.getColIdx"(%l, %lk) : (!daphne.Frame<4x[si64, !daphne.String], ["l.k", "l.s"]>, !daphne.String) -> !daphne.Unknown
  %mc = "daphne.cast"(%m) <{target_dt = "column"}> : (!daphne.Matrix<4x1xsi64>) -> !daphne.Unknown
  %one = "daphne.constant"() <{value = 1 : si64}> : () -> si64
  %p = "daphne.colSelectEq"(%mc, %one) : (!daphne.Unknown, si64) -> !daphne.Unknown
  %pr = "daphne.colProject"(%c, %p) : (!daphne.Column<4xf64>, !daphne.Unknown) -> !daphne.Unknown
  %g:2 = "daphne.colGroupFirst"(%mc) : (!daphne.Unknown) -> (!daphne.Unknown, !daphne.Unknown)
  %s = "daphne.colSumAll"(%c) : (!daphne.Column<4xf64>) -> !daphne.Unknown
  %x = "daphne.colCalcMul"(%mc, %c) : (!daphne.Unknown, !daphne.Column<4xf64>) -> !daphne.Unknown
  %sc = "daphne.cast"(%s) <{target_dt = "scalar"}> : (!daphne.Unknown) -> !daphne.Unknown
  %pm = "daphne.cast"(%p) <{target_dt = "matrix"}> : (!daphne.Unknown) -> !daphne.Unknown
  %n = "daphne.numRows"(%m) : (!daphne.Matrix<4x1xsi64>) -> index
  %b = "daphne.convertPosListToBitmap"(%pm, %n) <{vt = "f64"}> : (!daphne.Unknown, index) -> !daphne.Unknown
  %back = "daphne.convertBitmapToPosList"(%b) : (!daphne.Unknown) -> !daphne.Unknown
  func.return
}

// CHECK: "daphne.thetaJoin"({{.*}}) -> !daphne.Frame<?x[si64, !daphne.String, si64], ["l.k", "l.s", "r.k"]>
// CHECK: "daphne.getColIdx"({{.*}}) -> index
// CHECK: "daphne.cast"(%m) <{target_dt = "column"}> : (!daphne.Matrix<4x1xsi64>) -> !daphne.Column<4xsi64>
// CHECK: "daphne.colSelectEq"({{.*}}) : (!daphne.Column<4xsi64>, si64) -> !daphne.Column<?xindex>
// CHECK: "daphne.colProject"({{.*}}) : (!daphne.Column<4xf64>, !daphne.Column<?xindex>) -> !daphne.Column<?xf64>
// CHECK: "daphne.colGroupFirst"({{.*}}) : (!daphne.Column<4xsi64>) -> (!daphne.Column<4xindex>, !daphne.Column<?xindex>)
// CHECK: "daphne.colSumAll"({{.*}}) -> !daphne.Column<1xf64>
// CHECK: "daphne.colCalcMul"({{.*}}) : (!daphne.Column<4xsi64>, !daphne.Column<4xf64>) -> !daphne.Column<4xf64>
// CHECK: "daphne.cast"({{.*}}) <{target_dt = "scalar"}> : (!daphne.Column<1xf64>) -> f64
// CHECK: "daphne.cast"({{.*}}) <{target_dt = "matrix"}> : (!daphne.Column<?xindex>) -> !daphne.Matrix<?x1xindex>
// CHECK: "daphne.convertPosListToBitmap"({{.*}}) <{vt = "f64"}> : (!daphne.Matrix<?x1xindex>, index) -> !daphne.Matrix<4x1xf64>
// CHECK: "daphne.convertBitmapToPosList"({{.*}}) : (!daphne.Matrix<4x1xf64>) -> !daphne.Matrix<?x1xindex>
