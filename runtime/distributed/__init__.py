"""The distributed runtime over MPI (`daphnec --distributed`): a coordinator on rank 0 ships vectorized pipelines
(as IR text) and their data (as raw buffers) to workers on ranks >= 1 and combines their results.

Modules: `launch` (roles), `coordinator`, `worker`, `protocol` (tags, messages, polling), `serialization` (raw
buffers), `placement` (the placement cache), `liveness` (failure detection). Design: docs/distributed.md.
"""
