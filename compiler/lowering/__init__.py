"""Lowering of vectorized pipelines to native task kernels (DAPHNE's `--vec` code generation path).

    daphne.vectorizedPipeline --lower-pipeline-to-loops--> kernel module @vp_<hash>: func.func per stage over rows
                                                           (scf + arith + math + memref)
                              --convert-to-llvm-->          llvm.func per stage, plus its Python-facing entry
                              --compiler.backend.jit-->     LLVM IR (xDSL's llvmlite backend)
                              --runtime.native_code-->      object code (O3, host CPU), cached, loaded

`kernel_plan` decides whether a pipeline body lowers and what its kernel reads and writes; `abi` is the calling
convention every side of a kernel call derives from; `ew_kinds` lists the element-wise kinds that lower and
`elementwise` emits their exact scalar semantics (wrap-around, truncating division, x86 float->int conversion,
...). With `--codegen`, `lower_matmul_to_loops` gives every dense matrix product a kernel module `@mm_<hash>`
whose loop nest `matmul_loops` builds after the `--matmul-*` settings.
The lowering emits xDSL's llvm dialect and nothing else. `compiler.backend.native` plans every pipeline once
(`plan_pipelines`), runs the two passes with those plans (the kernel stages) and hands their result to the JIT;
`compiler.backend.wrapper` generates the Python side of each kernel for the executor.
"""
