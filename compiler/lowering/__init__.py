"""Lowering of vectorized pipelines to native task kernels (DAPHNE's `--vec` code generation path).

    daphne.vectorizedPipeline --lower-pipeline-to-loops--> func.func over rows (scf + arith + math + memref)
                              --convert-to-llvm-->          llvm.func (llvm dialect)
                              --xdsl.backend.llvm-->        LLVM IR --llvmlite (O3, host CPU)--> object code

`kernel_plan` decides whether a pipeline body lowers and fixes the kernel's ABI; `elementwise` emits the exact
scalar semantics of the runtime kernels (wrap-around, truncating division, x86 float->int conversion, ...);
`compiler.jit` compiles, caches and wraps the result as a Python callable for the executor.
"""
