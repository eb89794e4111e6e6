// RUN: %daphne-opt %s -p convert-to-llvm | FileCheck %s
// RUN: %daphne-opt %S/sum_of_products.mlir -p lower-pipeline-to-loops | %daphne-opt -p convert-to-llvm | FileCheck %s --check-prefix=CHAIN
// convert-to-llvm turns every task kernel of a kernel module into an llvm.func: buffers are noalias !llvm.ptr,
// index is i64, loops are blocks and branches, loads and stores go through inbounds GEPs, the f64 sum keeps its
// fastmath flags, and float->int conversions use the project's llvm.fptosi. After each kernel comes its
// Python-facing entry `@<kernel>_py`, built from the kernel's `daphne.abi`: a numpy array object in (pointer),
// its data pointer (read from the PyArrayObject) passed on; a CSR input's index arrays both as the i32 and the
// i64 view; scalars and flags by value. Host functions are left alone (the CHAIN check starts from the output
// of lower-pipeline-to-loops, printed and parsed again).

builtin.module @k {
  func.func @k_sum(%n: index, %x: memref<?xf64>, %out: memref<?xf64>) -> i64 attributes {daphne.task_kernel, daphne.abi = ["rows", "array", "array"]} {
    %false = arith.constant false
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f64
    %sum, %err = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %e = %false) -> (f64, i1) {
      %v = memref.load %x[%i] : memref<?xf64>
      %sq = arith.mulf %v, %v : f64
      %new = arith.addf %acc, %sq fastmath<reassoc,nsz> : f64
      scf.yield %new, %e : f64, i1
    }
    memref.store %sum, %out[%c0] : memref<?xf64>
    %status = arith.extui %err : i1 to i64
    func.return %status : i64
  }
  func.func @k_csr(%n: index, %data: memref<?xf64>, %i32: memref<?xi32>, %i64: memref<?xi64>, %p32: memref<?xi32>, %p64: memref<?xi64>, %flags: i64, %s: f64, %out: memref<?xi64>) -> i64 attributes {daphne.task_kernel, daphne.abi = ["rows", "csr", "f64", "array"]} {
    %c0 = arith.constant 0 : index
    %ok = arith.constant 0 : i64
    %t = arith.fptosi %s : f64 to i64
    memref.store %t, %out[%c0] : memref<?xi64>
    func.return %ok : i64
  }
}

// CHECK:      builtin.module @k {
// CHECK-NEXT:   llvm.func @k_sum(%[[N:.*]]: i64, %[[X:.*]]: !llvm.ptr {llvm.noalias}, %[[OUT:.*]]: !llvm.ptr {llvm.noalias}) -> i64
// CHECK:          llvm.br ^[[HEAD:.*]](
// CHECK:        ^[[HEAD]](%[[I:.*]]: i64, %[[ACC:.*]]: f64, %{{.*}}: i1):
// CHECK-NEXT:     %[[MORE:.*]] = llvm.icmp "slt" %[[I]], %[[N]] : i64
// CHECK-NEXT:     llvm.cond_br %[[MORE]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK:        ^[[BODY]]:
// CHECK-NEXT:     %[[P:.*]] = llvm.getelementptr inbounds %[[X]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:     %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f64
// CHECK-NEXT:     %[[SQ:.*]] = llvm.fmul %[[V]], %[[V]] : f64
// CHECK-NEXT:     llvm.fadd %[[ACC]], %[[SQ]] {fastmathFlags = #llvm.fastmath<reassoc,nsz>} : f64
// CHECK:        ^[[EXIT]]:
// CHECK:          llvm.store %[[ACC]], %{{.*}} : f64, !llvm.ptr
// CHECK:          llvm.return %{{.*}} : i64
// CHECK:        llvm.func @k_sum_py(%[[PN:.*]]: i64, %[[PX:.*]]: !llvm.ptr, %[[POUT:.*]]: !llvm.ptr) -> i64
// CHECK-NEXT:     %[[AT:.*]] = llvm.getelementptr inbounds %[[PX]][{{[0-9]+}}] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:     %[[DX:.*]] = llvm.load %[[AT]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %[[AT2:.*]] = llvm.getelementptr inbounds %[[POUT]][{{[0-9]+}}] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:     %[[DOUT:.*]] = llvm.load %[[AT2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     %[[R:.*]] = llvm.call @k_sum(%[[PN]], %[[DX]], %[[DOUT]]) : (i64, !llvm.ptr, !llvm.ptr) -> i64
// CHECK-NEXT:     llvm.return %[[R]] : i64
// CHECK:        llvm.func @k_csr(
// CHECK:          llvm.fptosi %{{.*}} : f64 to i64
// CHECK:        llvm.func @k_csr_py(%[[CN:.*]]: i64, %[[D:.*]]: !llvm.ptr, %[[IND:.*]]: !llvm.ptr, %[[PTR:.*]]: !llvm.ptr, %[[FLAGS:.*]]: i64, %[[S:.*]]: f64, %[[O:.*]]: !llvm.ptr) -> i64
// CHECK:          %[[DD:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:          %[[DI:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:          %[[DP:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:          %[[DO:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:     llvm.call @k_csr(%[[CN]], %[[DD]], %[[DI]], %[[DI]], %[[DP]], %[[DP]], %[[FLAGS]], %[[S]], %[[DO]])

// CHAIN:      func.func @main(
// CHAIN:      "daphne.vectorizedPipeline"
// CHAIN:      }) {daphne.native_kernel = @[[K:vp_[0-9a-f]+]]}
// CHAIN:      builtin.module @[[K]] {
// CHAIN-NEXT:   llvm.func @[[K]](
// CHAIN:        llvm.func @[[K]]_py(
// CHAIN:          llvm.call @[[K]](
