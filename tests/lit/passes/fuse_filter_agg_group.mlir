// RUN: %daphne-opt %s -p 'fuse-filter-agg{ordered=true}' | FileCheck %s
// `fuse-filter-agg` on GROUP BY: `SELECT t.g, sum(t.x * 2.0), avg(t.k), count(t.x) FROM t WHERE t.k < 2 GROUP BY t.g`.
// The filter, the appended aggregate columns (colBind/createFrame) and daphne.group are replaced by group ids of
// the unfiltered frame (daphne.groupIds, before the pipeline), one pipeline of grouped sums of
// `bits ? value : 0` (AVG's argument in f64, COUNT as a sum of ones) and daphne.groupResult, which keeps the
// group's result type. The input is a script's IR after `sql,specialize,canonicalize,specialize,dce`.

builtin.module {
  func.func @main() {
    %0 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %1 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %2 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %3 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %4 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %5 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %6 = "daphne.matrixLiteral"(%0, %1, %2, %3, %4, %5) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (si64, si64, si64, si64, si64, si64) -> !daphne.Matrix<4x1xsi64>
    %7 = "daphne.constant"() <{value = "a"}> : () -> !daphne.String
    %8 = "daphne.constant"() <{value = "b"}> : () -> !daphne.String
    %9 = "daphne.constant"() <{value = "a"}> : () -> !daphne.String
    %10 = "daphne.constant"() <{value = "c"}> : () -> !daphne.String
    %11 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %12 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %13 = "daphne.matrixLiteral"(%7, %8, %9, %10, %11, %12) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (!daphne.String, !daphne.String, !daphne.String, !daphne.String, si64, si64) -> !daphne.Matrix<4x1x!daphne.String>
    %14 = "daphne.constant"() <{value = 5.000000e-01 : f64}> : () -> f64
    %15 = "daphne.constant"() <{value = 1.500000e+00 : f64}> : () -> f64
    %16 = "daphne.constant"() <{value = 2.500000e+00 : f64}> : () -> f64
    %17 = "daphne.constant"() <{value = 3.500000e+00 : f64}> : () -> f64
    %18 = "daphne.constant"() <{value = 4 : si64}> : () -> si64
    %19 = "daphne.constant"() <{value = 1 : si64}> : () -> si64
    %20 = "daphne.matrixLiteral"(%14, %15, %16, %17, %18, %19) <{operandSegmentSizes = array<i32: 4, 1, 1>}> : (f64, f64, f64, f64, si64, si64) -> !daphne.Matrix<4x1xf64>
    %21 = "daphne.constant"() <{value = "k"}> : () -> !daphne.String
    %22 = "daphne.constant"() <{value = "g"}> : () -> !daphne.String
    %23 = "daphne.constant"() <{value = "x"}> : () -> !daphne.String
    %24 = "daphne.createFrame"(%6, %13, %20, %21, %22, %23) <{operandSegmentSizes = array<i32: 3, 3>}> : (!daphne.Matrix<4x1xsi64>, !daphne.Matrix<4x1x!daphne.String>, !daphne.Matrix<4x1xf64>, !daphne.String, !daphne.String, !daphne.String) -> !daphne.Frame<4x[si64, !daphne.String, f64], ["k", "g", "x"]>
    %25 = "daphne.constant"() <{value = "t"}> : () -> !daphne.String
    %26 = "daphne.setColLabelsPrefix"(%24, %25) : (!daphne.Frame<4x[si64, !daphne.String, f64], ["k", "g", "x"]>, !daphne.String) -> !daphne.Frame<4x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>
    %27 = "daphne.constant"() <{value = "t.k"}> : () -> !daphne.String
    %28 = "daphne.extractCol"(%26, %27) : (!daphne.Frame<4x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>, !daphne.String) -> !daphne.Frame<4x[si64], ["t.k"]>
    %29 = "daphne.cast"(%28) <{target_dt = "matrix"}> : (!daphne.Frame<4x[si64], ["t.k"]>) -> !daphne.Matrix<4x1xsi64>
    %30 = "daphne.constant"() <{value = 2 : si64}> : () -> si64
    %31 = "daphne.ewLt"(%29, %30) : (!daphne.Matrix<4x1xsi64>, si64) -> !daphne.Matrix<4x1xsi64>
    %32 = "daphne.filterRow"(%26, %31) : (!daphne.Frame<4x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>, !daphne.Matrix<4x1xsi64>) -> !daphne.Frame<?x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>
    %33 = "daphne.constant"() <{value = "t.g"}> : () -> !daphne.String
    %34 = "daphne.constant"() <{value = "group_0_t.x*2.0"}> : () -> !daphne.String
    %35 = "daphne.constant"() <{value = "t.x"}> : () -> !daphne.String
    %36 = "daphne.extractCol"(%32, %35) : (!daphne.Frame<?x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.x"]>
    %37 = "daphne.cast"(%36) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.x"]>) -> !daphne.Matrix<?x1xf64>
    %38 = "daphne.constant"() <{value = 2.000000e+00 : f64}> : () -> f64
    %39 = "daphne.ewMul"(%37, %38) : (!daphne.Matrix<?x1xf64>, f64) -> !daphne.Matrix<?x1xf64>
    %40 = "daphne.constant"() <{value = "group_0_t.x*2.0"}> : () -> !daphne.String
    %41 = "daphne.createFrame"(%39, %40) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xf64>, !daphne.String) -> !daphne.Frame<?x[f64], ["group_0_t.x*2.0"]>
    %42 = "daphne.colBind"(%32, %41) : (!daphne.Frame<?x[si64, !daphne.String, f64], ["t.k", "t.g", "t.x"]>, !daphne.Frame<?x[f64], ["group_0_t.x*2.0"]>) -> !daphne.Frame<?x[si64, !daphne.String, f64, f64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0"]>
    %43 = "daphne.constant"() <{value = "group_1_t.k"}> : () -> !daphne.String
    %44 = "daphne.constant"() <{value = "t.k"}> : () -> !daphne.String
    %45 = "daphne.extractCol"(%42, %44) : (!daphne.Frame<?x[si64, !daphne.String, f64, f64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0"]>, !daphne.String) -> !daphne.Frame<?x[si64], ["t.k"]>
    %46 = "daphne.cast"(%45) <{target_dt = "matrix"}> : (!daphne.Frame<?x[si64], ["t.k"]>) -> !daphne.Matrix<?x1xsi64>
    %47 = "daphne.constant"() <{value = "group_1_t.k"}> : () -> !daphne.String
    %48 = "daphne.createFrame"(%46, %47) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xsi64>, !daphne.String) -> !daphne.Frame<?x[si64], ["group_1_t.k"]>
    %49 = "daphne.colBind"(%42, %48) : (!daphne.Frame<?x[si64, !daphne.String, f64, f64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0"]>, !daphne.Frame<?x[si64], ["group_1_t.k"]>) -> !daphne.Frame<?x[si64, !daphne.String, f64, f64, si64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0", "group_1_t.k"]>
    %50 = "daphne.constant"() <{value = "group_2_t.x"}> : () -> !daphne.String
    %51 = "daphne.constant"() <{value = "t.x"}> : () -> !daphne.String
    %52 = "daphne.extractCol"(%49, %51) : (!daphne.Frame<?x[si64, !daphne.String, f64, f64, si64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0", "group_1_t.k"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["t.x"]>
    %53 = "daphne.cast"(%52) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["t.x"]>) -> !daphne.Matrix<?x1xf64>
    %54 = "daphne.constant"() <{value = "group_2_t.x"}> : () -> !daphne.String
    %55 = "daphne.createFrame"(%53, %54) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xf64>, !daphne.String) -> !daphne.Frame<?x[f64], ["group_2_t.x"]>
    %56 = "daphne.colBind"(%49, %55) : (!daphne.Frame<?x[si64, !daphne.String, f64, f64, si64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0", "group_1_t.k"]>, !daphne.Frame<?x[f64], ["group_2_t.x"]>) -> !daphne.Frame<?x[si64, !daphne.String, f64, f64, si64, f64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0", "group_1_t.k", "group_2_t.x"]>
    %57 = "daphne.group"(%56, %33, %34, %43, %50) <{agg_funcs = ["SUM", "AVG", "COUNT"], operandSegmentSizes = array<i32: 1, 1, 3>}> : (!daphne.Frame<?x[si64, !daphne.String, f64, f64, si64, f64], ["t.k", "t.g", "t.x", "group_0_t.x*2.0", "group_1_t.k", "group_2_t.x"]>, !daphne.String, !daphne.String, !daphne.String, !daphne.String) -> !daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>
    %58 = "daphne.constant"() <{value = "t.g"}> : () -> !daphne.String
    %59 = "daphne.extractCol"(%57, %58) : (!daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>, !daphne.String) -> !daphne.Frame<?x[!daphne.String], ["t.g"]>
    %60 = "daphne.cast"(%59) <{target_dt = "matrix"}> : (!daphne.Frame<?x[!daphne.String], ["t.g"]>) -> !daphne.Matrix<?x1x!daphne.String>
    %61 = "daphne.constant"() <{value = "t.g"}> : () -> !daphne.String
    %62 = "daphne.createFrame"(%60, %61) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1x!daphne.String>, !daphne.String) -> !daphne.Frame<?x[!daphne.String], ["t.g"]>
    %63 = "daphne.constant"() <{value = "SUM(group_0_t.x*2.0)"}> : () -> !daphne.String
    %64 = "daphne.extractCol"(%57, %63) : (!daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["SUM(group_0_t.x*2.0)"]>
    %65 = "daphne.cast"(%64) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["SUM(group_0_t.x*2.0)"]>) -> !daphne.Matrix<?x1xf64>
    %66 = "daphne.constant"() <{value = "s"}> : () -> !daphne.String
    %67 = "daphne.createFrame"(%65, %66) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xf64>, !daphne.String) -> !daphne.Frame<?x[f64], ["s"]>
    %68 = "daphne.colBind"(%62, %67) : (!daphne.Frame<?x[!daphne.String], ["t.g"]>, !daphne.Frame<?x[f64], ["s"]>) -> !daphne.Frame<?x[!daphne.String, f64], ["t.g", "s"]>
    %69 = "daphne.constant"() <{value = "AVG(group_1_t.k)"}> : () -> !daphne.String
    %70 = "daphne.extractCol"(%57, %69) : (!daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>, !daphne.String) -> !daphne.Frame<?x[f64], ["AVG(group_1_t.k)"]>
    %71 = "daphne.cast"(%70) <{target_dt = "matrix"}> : (!daphne.Frame<?x[f64], ["AVG(group_1_t.k)"]>) -> !daphne.Matrix<?x1xf64>
    %72 = "daphne.constant"() <{value = "a"}> : () -> !daphne.String
    %73 = "daphne.createFrame"(%71, %72) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xf64>, !daphne.String) -> !daphne.Frame<?x[f64], ["a"]>
    %74 = "daphne.colBind"(%68, %73) : (!daphne.Frame<?x[!daphne.String, f64], ["t.g", "s"]>, !daphne.Frame<?x[f64], ["a"]>) -> !daphne.Frame<?x[!daphne.String, f64, f64], ["t.g", "s", "a"]>
    %75 = "daphne.constant"() <{value = "COUNT(group_2_t.x)"}> : () -> !daphne.String
    %76 = "daphne.extractCol"(%57, %75) : (!daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>, !daphne.String) -> !daphne.Frame<?x[si64], ["COUNT(group_2_t.x)"]>
    %77 = "daphne.cast"(%76) <{target_dt = "matrix"}> : (!daphne.Frame<?x[si64], ["COUNT(group_2_t.x)"]>) -> !daphne.Matrix<?x1xsi64>
    %78 = "daphne.constant"() <{value = "n"}> : () -> !daphne.String
    %79 = "daphne.createFrame"(%77, %78) <{operandSegmentSizes = array<i32: 1, 1>}> : (!daphne.Matrix<?x1xsi64>, !daphne.String) -> !daphne.Frame<?x[si64], ["n"]>
    %80 = "daphne.colBind"(%74, %79) : (!daphne.Frame<?x[!daphne.String, f64, f64], ["t.g", "s", "a"]>, !daphne.Frame<?x[si64], ["n"]>) -> !daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "s", "a", "n"]>
    %81 = "daphne.constant"() <{value = true}> : () -> i1
    %82 = "daphne.constant"() <{value = false}> : () -> i1
    "daphne.print"(%80, %81, %82) : (!daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "s", "a", "n"]>, i1, i1) -> ()
    func.return
  }
}


// CHECK-NOT:  "daphne.filterRow"
// CHECK:      %[[K:.*]] = "daphne.cast"(%{{.*}}) <{target_dt = "matrix"}> : (!daphne.Frame<4x[si64], ["t.k"]>) -> !daphne.Matrix<4x1xsi64>
// CHECK:      %[[IDS:.*]], %[[KEYS:.*]] = "daphne.groupIds"(%{{.*}}, %{{.*}}) : ({{.*}}) -> (!daphne.Matrix<4x1xsi64>, !daphne.Frame<?x[!daphne.String], ["t.g"]>)
// CHECK-NEXT: %[[G:.*]] = "daphne.numRows"(%[[KEYS]])
// CHECK-NEXT: %[[NG:.*]] = "daphne.cast"(%[[G]]) <{target_vt = "si64", target_dt = "scalar"}> : (index) -> si64
// CHECK:      %[[X:.*]] = "daphne.cast"(%{{.*}}) <{target_dt = "matrix"}> : (!daphne.Frame<4x[f64], ["t.x"]>) -> !daphne.Matrix<4x1xf64>
// CHECK:      %[[N:.*]], %[[S:.*]], %[[A:.*]] = "daphne.vectorizedPipeline"(%[[K]], %[[X]], %[[IDS]], %[[NG]]) <{splits = [#builtin.int<1>, #builtin.int<1>, #builtin.int<1>, #builtin.int<0>], combines = [#builtin.int<3>, #builtin.int<3>, #builtin.int<3>]}> ({
// CHECK-NEXT: ^bb0(%[[BK:.*]]: !daphne.Matrix<?x1xsi64>, %[[BX:.*]]: !daphne.Matrix<?x1xf64>, %[[BI:.*]]: !daphne.Matrix<?x1xsi64>, %[[BG:.*]]: si64):
// CHECK:        %[[BITS:.*]] = "daphne.ewLt"(%[[BK]], %{{.*}})
// CHECK:        %[[P:.*]] = "daphne.ewMul"(%[[BX]], %{{.*}})
// CHECK:        %[[ONES:.*]] = "daphne.cond"(%[[BITS]], %{{.*}}, %{{.*}}) : (!daphne.Matrix<?x1xsi64>, si64, si64) -> !daphne.Matrix<?x1xsi64>
// CHECK-NEXT:   %[[CNT:.*]] = "daphne.groupedSum"(%[[BI]], %[[ONES]], %[[BG]]) : (!daphne.Matrix<?x1xsi64>, !daphne.Matrix<?x1xsi64>, si64) -> !daphne.Matrix<?x1xsi64>
// CHECK:        %[[SEL:.*]] = "daphne.cond"(%[[BITS]], %[[P]], %{{.*}})
// CHECK-NEXT:   %[[SUM:.*]] = "daphne.groupedSum"(%[[BI]], %[[SEL]], %[[BG]]) : ({{.*}}) -> !daphne.Matrix<?x1xf64>
// CHECK-NEXT:   %[[KF:.*]] = "daphne.cast"(%[[BK]]) <{target_vt = "f64"}> : (!daphne.Matrix<?x1xsi64>) -> !daphne.Matrix<?x1xf64>
// CHECK:        %[[SEL2:.*]] = "daphne.cond"(%[[BITS]], %[[KF]], %{{.*}})
// CHECK-NEXT:   %[[AVG:.*]] = "daphne.groupedSum"(%[[BI]], %[[SEL2]], %[[BG]])
// CHECK-NEXT:   "daphne.return"(%[[CNT]], %[[SUM]], %[[AVG]])
// CHECK-NEXT: }) {daphne.ordered}
// CHECK:      %[[R:.*]] = "daphne.groupResult"(%[[KEYS]], %[[N]], %[[S]], %[[A]], %[[N]]) <{agg_funcs = ["SUM", "AVG", "COUNT"], labels = ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]}> : {{.*}} -> !daphne.Frame<?x[!daphne.String, f64, f64, si64], ["t.g", "SUM(group_0_t.x*2.0)", "AVG(group_1_t.k)", "COUNT(group_2_t.x)"]>
// CHECK-NOT:  "daphne.group"(
// CHECK-NOT:  "daphne.filterRow"
// CHECK:      "daphne.print"
