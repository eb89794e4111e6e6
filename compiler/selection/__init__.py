"""Kernel selection (DAPHNE's kernel lowering): which runtime kernel implements each op, for its inferred types.

`table` holds the one table from op classes to kernels (`KERNELS`, `select_kernel`); `spec` what a selector
returns; the selectors whose choice depends on types are filed by builtin category (`core`, `matrix`, `frame`,
`io`, `sql`); `representations` adapts a kernel to the dense or CSR operands and results its op's types promise;
`naming` is DAPHNE's kernel naming scheme (kernel hints, `--kernel-ext` catalogs). A selector
returns runtime functions (or `functools.partial`s of them), never code made here, so that a compiled program
holds nothing of the compiler."""
