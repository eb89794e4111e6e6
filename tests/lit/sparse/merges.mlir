// RUN: %daphne-opt %s -p select-matrix-repr | FileCheck %s
// A loop-carried matrix keeps the sparse representation only if the loop body keeps its estimate: `X * 2` does,
// `X + 1` does not, so that loop's variable is dense and the sparse initial value is converted by a merge cast
// before the loop. Function results stay dense (the sparse return value is converted before `func.return`).

func.func @main() {
  %r = "daphne.constant"() <{value = 8 : index}> : () -> index
  %lo = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %hi = "daphne.constant"() <{value = 2.0 : f64}> : () -> f64
  %sp = "daphne.constant"() <{value = 0.1 : f64}> : () -> f64
  %seed = "daphne.constant"() <{value = 7 : si64}> : () -> si64
  %x = "daphne.randMatrix"(%r, %r, %lo, %hi, %sp, %seed) : (index, index, f64, f64, f64, si64) -> !daphne.Matrix<8x8xf64>
  %c0 = "daphne.constant"() <{value = 0 : index}> : () -> index
  %c1 = "daphne.constant"() <{value = 1 : index}> : () -> index
  %c3 = "daphne.constant"() <{value = 3 : index}> : () -> index
  %a = scf.for %i = %c0 to %c3 step %c1 iter_args(%m = %x) -> (!daphne.Matrix<8x8xf64>) : index {
    %m2 = "daphne.ewMul"(%m, %hi) : (!daphne.Matrix<8x8xf64>, f64) -> !daphne.Matrix<8x8xf64>
    scf.yield %m2 : !daphne.Matrix<8x8xf64>
  }
  %b = scf.for %i = %c0 to %c3 step %c1 iter_args(%m = %x) -> (!daphne.Matrix<8x8xf64>) : index {
    %m2 = "daphne.ewAdd"(%m, %lo) : (!daphne.Matrix<8x8xf64>, f64) -> !daphne.Matrix<8x8xf64>
    scf.yield %m2 : !daphne.Matrix<8x8xf64>
  }
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%a, %t, %t) : (!daphne.Matrix<8x8xf64>, i1, i1) -> ()
  "daphne.print"(%b, %t, %t) : (!daphne.Matrix<8x8xf64>, i1, i1) -> ()
  func.return
}

func.func @f(%x: !daphne.Matrix<8x8xf64>) -> !daphne.Matrix<8x8xf64> {
  %z = "daphne.constant"() <{value = 0.0 : f64}> : () -> f64
  %r = "daphne.constant"() <{value = 8 : index}> : () -> index
  %m = "daphne.fill"(%z, %r, %r) : (f64, index, index) -> !daphne.Matrix<8x8xf64>
  func.return %m : !daphne.Matrix<8x8xf64>
}

// CHECK:      %x = "daphne.randMatrix"{{.*}} -> !daphne.Matrix<8x8xf64:sp[1.000000e-01]:rep[sparse]>
// CHECK:      %a = scf.for {{.*}} iter_args(%m = %x) -> (!daphne.Matrix<8x8xf64:sp[1.000000e-01]:rep[sparse]>)
// CHECK:        "daphne.ewMul"{{.*}} -> !daphne.Matrix<8x8xf64:sp[1.000000e-01]:rep[sparse]>
// CHECK:      %[[CAST:.*]] = "daphne.cast"(%x) <{target_vt = "f64", target_dt = "matrix"}> {daphne.merge} : (!daphne.Matrix<8x8xf64:sp[1.000000e-01]:rep[sparse]>) -> !daphne.Matrix<8x8xf64>
// CHECK-NEXT: %b = scf.for {{.*}} iter_args(%{{.*}} = %[[CAST]]) -> (!daphne.Matrix<8x8xf64>)
// CHECK:      func.func @f
// CHECK:        %m = "daphne.fill"{{.*}} -> !daphne.Matrix<8x8xf64:sp[0.000000e+00]:rep[sparse]>
// CHECK-NEXT:   %[[RET:.*]] = "daphne.cast"(%m) {{.*}} {daphne.merge} : (!daphne.Matrix<8x8xf64:sp[0.000000e+00]:rep[sparse]>) -> !daphne.Matrix<8x8xf64>
// CHECK-NEXT:   func.return %[[RET]] : !daphne.Matrix<8x8xf64>
