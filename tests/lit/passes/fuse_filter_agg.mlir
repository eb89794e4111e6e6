// RUN: %daphne-opt %s -p 'fuse-filter-agg{ordered=true}' | FileCheck %s
// RUN: %daphne-opt %s -p fuse-filter-agg | FileCheck %s --check-prefix=VEC
// `fuse-filter-agg`: the filter of `SELECT sum(t.x * t.d), max(t.x) FROM t WHERE t.k >= 2 AND t.d < 0.35` becomes
// a predicate. The aggregates read `cond(bits, value, neutral)` over the unfiltered columns, and the predicate,
// the product, the selects and the aggregates form one pipeline (ordered on the default path). `count` is the sum
// of `bits ? 1 : 0`. The filterRow and the filtered frame's columns are gone; `t.d` is read once.
// The input is a script's IR after `sql,specialize,canonicalize,specialize,dce`.

builtin.module {
  func.func @main() {
    %0 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %1 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %2 = "daphne.constant"() <{value = 3 : si64}> : () -> si64
    %3 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %4 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %5 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %6 = "daphne.matrixLiteral"(%0, %1, %2, %3, %4, %5) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (si64, si64, si64, si64, si64, si64) -> !daphne.Matrix<4x1xsi64>
    %7 = "daphne.constant"() <{value = 5.000000e-01 : f64}> : () -> f64
    %8 = "daphne.constant"() <{value = 1.500000e+00 : f64}> : () -> f64
    %9 = "daphne.constant"() <{value = 2.500000e+00 : f64}> : () -> f64
    %10 = "daphne.constant"() <{value = 3.500000e+00 : f64}> : () -> f64
    %11 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %12 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %13 = "daphne.matrixLiteral"(%7, %8, %9, %10, %11, %12) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (f64, f64, f64, f64, si64, si64) -> !daphne.Matrix<4x1xf64>
    %14 = "daphne.constant"() <{value = 1.000000e-01 : f64}> : () -> f64
    %15 = "daphne.constant"() <{value = 2.000000e-01 : f64}> : () -> f64
    %16 = "daphne.constant"() <{value = 3.000000e-01 : f64}> : () -> f64
    %17 = "daphne.constant"() <{value = 4.000000e-01 : f64}> : () -> f64
    %18 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %19 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %20 = "daphne.matrixLiteral"(%14, %15, %16, %17, %18, %19) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (f64, f64, f64, f64, si64, si64) -> !daphne.Matrix<4x1xf64>
    %21 = "daphne.constant"() <{value = "k"}> : () -> !daphne.String
    %22 = "daphne.constant"() <{value = "x"}> : () -> !daphne.String
    %23 = "daphne.constant"() <{value = "d"}> : () -> !daphne.String
    %24 = "daphne.createFrame"(%6, %13, %20, %21, %22, %23) <{operandSegmentSizes = array<i32: 3, 3>}> : (!daphne.Matrix<4x1xsi64>, !daphne.Matrix<4x1xf64>, !daphne.Matrix<4x1xf64>, !daphne.String, !daphne.String, !daphne.String) -> !daphne.Frame<4x[si64, f64, f64], ["k", "x", "d"]>
    %25 = "daphne.constant"() <{value = "t"}> : () -> !daphne.String
    %26 = "daphne.setColLabelsPrefix"(%24, %25) : (!daphne.Frame<4x[si64, f64, f64], ["k", "x", "d"]>, !daphne.String) -> !daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>
    %27 = "daphne.constant"() <{value = "t.k"}> : () -> !daphne.String
    %28 = "daphne.extractCol"(%26, %27) : (!daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<4x[si64], ["t.k"]>
    %29 = "daphne.cast"(%28) <{target_dt = "matrix"}> : (!daphne.Frame<4x[si64], ["t.k"]>) -> !daphne.Matrix<4x1xsi64>
    %30 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %31 = "daphne.ewGe"(%29, %30) : (!daphne.Matrix<4x1xsi64>, si64) -> !daphne.Matrix<4x1xsi64>
    %32 = "daphne.constant"() <{value = "t.d"}> : () -> !daphne.String
    %33 = "daphne.extractCol"(%26, %32) : (!daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<4x[f64], ["t.d"]>
    %34 = "daphne.cast"(%33) <{target_dt = "matrix"}> : (!daphne.Frame<4x[f64], ["t.d"]>) -> !daphne.Matrix<4x1xf64>
    %35 = "daphne.constant"() <{value = 3.500000e-01 : f64}> : () -> f64
    %36 = "daphne.ewLt"(%34, %35) : (!daphne.Matrix<4x1xf64>, f64) -> !daphne.Matrix<4x1xf64>
    %37 = "daphne.ewAnd"(%31, %36) : (!daphne.Matrix<4x1xsi64>, !daphne.Matrix<4x1xf64>) -> !daphne.Matrix<4x1xui64>
    %38 = "daphne.filterRow"(%26, %37) : (!daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.Matrix<4x1xui64>) -> !daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>
    %39 = "daphne.constant"() <{value = "t.x"}> : () -> !daphne.String
    %40 = "daphne.extractCol"(%38, %39) : (!daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.x"]>
    %41 = "daphne.cast"(%40) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.x"]>) -> !daphne.Matrix<?x1xf64>
    %42 = "daphne.constant"() <{value = "t.d"}> : () -> !daphne.String
    %43 = "daphne.extractCol"(%38, %42) : (!daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.d"]>
    %44 = "daphne.cast"(%43) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.d"]>) -> !daphne.Matrix<?x1xf64>
    %45 = "daphne.ewMul"(%41, %44) : (!daphne.Matrix<?x1xf64>, !daphne.Matrix<?x1xf64>) -> !daphne.Matrix<?x1xf64>
    %46 = "daphne.sumAll"(%45) : (!daphne.Matrix<?x1xf64>) -> f64
    %47 = "daphne.cast"(%46) <{target_dt = "matrix"}> : (f64) -> !daphne.Matrix<1x1xf64>
    %48 = "daphne.constant"() <{value = "s"}> : () -> !daphne.String
    %49 = "daphne.createFrame"(%47, %48) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<1x1xf64>, !daphne.String) -> !daphne.Frame<1x[f64], ["s"]>
    %50 = "daphne.constant"() <{value = "t.x"}> : () -> !daphne.String
    %51 = "daphne.extractCol"(%38, %50) : (!daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.x"]>
    %52 = "daphne.cast"(%51) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.x"]>) -> !daphne.Matrix<?x1xf64>
    %53 = "daphne.maxAll"(%52) : (!daphne.Matrix<?x1xf64>) -> f64
    %54 = "daphne.cast"(%53) <{target_dt = "matrix"}> : (f64) -> !daphne.Matrix<1x1xf64>
    %55 = "daphne.constant"() <{value = "m"}> : () -> !daphne.String
    %56 = "daphne.createFrame"(%54, %55) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<1x1xf64>, !daphne.String) -> !daphne.Frame<1x[f64], ["m"]>
    %57 = "daphne.colBind"(%49, %56) : (!daphne.Frame<1x[f64], ["s"]>, !daphne.Frame<1x[f64], ["m"]>) -> !daphne.Frame<1x[f64, f64], ["s", "m"]>
    %58 = "daphne.constant"() <{value = true}> : () -> i1
    %59 = "daphne.constant"() <{value = false}> : () -> i1
    "daphne.print"(%57, %58, %59) : (!daphne.Frame<1x[f64, f64], ["s", "m"]>, i1, i1) -> ()
    %60 = "daphne.constant"() <{value = "t"}> : () -> !daphne.String
    %61 = "daphne.setColLabelsPrefix"(%24, %60) : (!daphne.Frame<4x[si64, f64, f64], ["k", "x", "d"]>, !daphne.String) -> !daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>
    %62 = "daphne.constant"() <{value = "t.k"}> : () -> !daphne.String
    %63 = "daphne.extractCol"(%61, %62) : (!daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<4x[si64], ["t.k"]>
    %64 = "daphne.cast"(%63) <{target_dt = "matrix"}> : (!daphne.Frame<4x[si64], ["t.k"]>) -> !daphne.Matrix<4x1xsi64>
    %65 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %66 = "daphne.ewGe"(%64, %65) : (!daphne.Matrix<4x1xsi64>, si64) -> !daphne.Matrix<4x1xsi64>
    %67 = "daphne.filterRow"(%61, %66) : (!daphne.Frame<4x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.Matrix<4x1xsi64>) -> !daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>
    %68 = "daphne.constant"() <{value = "t.x"}> : () -> !daphne.String
    %69 = "daphne.extractCol"(%67, %68) : (!daphne.Frame<?x[si64, f64, f64], ["t.k", "t.x", "t.d"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.x"]>
    %70 = "daphne.cast"(%69) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.x"]>) -> !daphne.Matrix<?x1xf64>
    %71 = "daphne.numRows"(%70) : (!daphne.Matrix<?x1xf64>) -> index
    %72 = "daphne.cast"(%71) <{target_vt = "si64", target_dt = "scalar"}> : (index) -> si64
    %73 = "daphne.cast"(%72) <{target_dt = "matrix"}> : (si64) -> !daphne.Matrix<1x1xsi64>
    %74 = "daphne.constant"() <{value = "n"}> : () -> !daphne.String
    %75 = "daphne.createFrame"(%73, %74) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<1x1xsi64>, !daphne.String) -> !daphne.Frame<1x[si64], ["n"]>
    %76 = "daphne.constant"() <{value = true}> : () -> i1
    %77 = "daphne.constant"() <{value = false}> : () -> i1
    "daphne.print"(%75, %76, %77) : (!daphne.Frame<1x[si64], ["n"]>, i1, i1) -> ()
    func.return
  }
}


// CHECK-NOT:  "daphne.filterRow"
// CHECK:      %[[K:.*]] = "daphne.cast"(%{{.*}}) <{target_dt = "matrix"}> : (!daphne.Frame<4x[si64], ["t.k"]>) -> !daphne.Matrix<4x1xsi64>
// CHECK:      %[[D:.*]] = "daphne.cast"(%{{.*}}) <{target_dt = "matrix"}> : (!daphne.Frame<4x[f64], ["t.d"]>) -> !daphne.Matrix<4x1xf64>
// CHECK:      %[[X:.*]] = "daphne.cast"(%{{.*}}) <{target_dt = "matrix"}> : (!daphne.Frame<4x[f64], ["t.x"]>) -> !daphne.Matrix<4x1xf64>
// CHECK:      %[[S:.*]], %[[M:.*]] = "daphne.vectorizedPipeline"(%[[K]], %[[D]], %[[X]]) <{splits = [#builtin.int<1>, #builtin.int<1>, #builtin.int<1>], combines = [#builtin.int<3>, #builtin.int<5>]}> ({
// CHECK-NEXT: ^bb0(%[[BK:.*]]: !daphne.Matrix<?x1xsi64>, %[[BD:.*]]: !daphne.Matrix<?x1xf64>, %[[BX:.*]]: !daphne.Matrix<?x1xf64>):
// CHECK:        %[[GE:.*]] = "daphne.ewGe"(%[[BK]], %{{.*}})
// CHECK:        %[[LT:.*]] = "daphne.ewLt"(%[[BD]], %{{.*}})
// CHECK-NEXT:   %[[BITS:.*]] = "daphne.ewAnd"(%[[GE]], %[[LT]])
// CHECK-NEXT:   %[[P:.*]] = "daphne.ewMul"(%[[BX]], %[[BD]])
// CHECK-NEXT:   %[[Z:.*]] = "daphne.constant"() <{value = 0.000000e+00 : f64}>
// CHECK-NEXT:   %[[SEL:.*]] = "daphne.cond"(%[[BITS]], %[[P]], %[[Z]]) : (!daphne.Matrix<?x1xui64>, !daphne.Matrix<?x1xf64>, f64) -> !daphne.Matrix<?x1xf64>
// CHECK-NEXT:   %[[SUM:.*]] = "daphne.sumAll"(%[[SEL]])
// CHECK-NEXT:   %[[NINF:.*]] = "daphne.constant"() <{value = 0xfff0000000000000 : f64}>
// CHECK-NEXT:   %[[SEL2:.*]] = "daphne.cond"(%[[BITS]], %[[BX]], %[[NINF]])
// CHECK-NEXT:   %[[MAX:.*]] = "daphne.maxAll"(%[[SEL2]])
// CHECK-NEXT:   "daphne.return"(%[[SUM]], %[[MAX]]) : (f64, f64) -> ()
// CHECK-NEXT: }) {daphne.ordered} : (!daphne.Matrix<4x1xsi64>, !daphne.Matrix<4x1xf64>, !daphne.Matrix<4x1xf64>) -> (f64, f64)
// CHECK:      "daphne.cast"(%[[S]]) <{target_dt = "matrix"}>
// CHECK:      "daphne.cast"(%[[M]]) <{target_dt = "matrix"}>
// CHECK-NOT:  "daphne.filterRow"
// CHECK-NOT:  ["t.x"]>
// CHECK:      %[[N:.*]] = "daphne.vectorizedPipeline"(%{{.*}}) <{splits = [#builtin.int<1>], combines = [#builtin.int<3>]}> ({
// CHECK:        %[[ONE:.*]] = "daphne.constant"() <{value = 1 : si64}>
// CHECK-NEXT:   %[[ZERO:.*]] = "daphne.constant"() <{value = 0 : si64}>
// CHECK-NEXT:   %[[C:.*]] = "daphne.cond"(%{{.*}}, %[[ONE]], %[[ZERO]]) : (!daphne.Matrix<?x1xsi64>, si64, si64) -> !daphne.Matrix<?x1xsi64>
// CHECK-NEXT:   "daphne.sumAll"(%[[C]])
// CHECK:      }) {daphne.ordered}
// CHECK-NEXT: "daphne.cast"(%[[N]]) <{target_vt = "index", target_dt = "scalar"}> : (si64) -> index

// VEC:        "daphne.cond"
// VEC:        }) : (!daphne.Matrix<4x1xsi64>, !daphne.Matrix<4x1xf64>, !daphne.Matrix<4x1xf64>) -> (f64, f64)
// VEC-NOT:    daphne.ordered
