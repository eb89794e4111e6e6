"""Analyses the passes and the host code generator ask about the IR: type/shape inference (`inference`, with the
`.meta`-file hooks of `infer_io`), sparsity estimates (`sparsity`), memoized memory effects (`effects`), the free
values of outlined ops (`free_values`) and which ops a vectorized pipeline can hold (`vectorizable`). They read
the IR and change only types; rewriting is the passes' job (`compiler.passes`)."""
