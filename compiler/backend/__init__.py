"""The native backend: from the kernel modules the lowering passes build (`compiler.lowering`, xDSL's llvm
dialect) to loaded kernels the runtime calls.

`native` plans each vectorized pipeline (and, with `--codegen`, each matrix product) once and builds its kernel;
`jit` translates llvm-dialect modules to LLVM IR and runs the builds on the compile thread; `wrapper` generates
the Python side of each pipeline kernel. Compiling LLVM IR, the target machine, the object-code cache and loading
belong to the runtime's one module for native code, which cached programs use without the compiler."""
