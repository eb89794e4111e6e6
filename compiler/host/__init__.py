"""Host code: every IR function becomes one Python function calling runtime kernels (`generator`), packaged as
an executable `HostProgram` (`program`), stored and restored by the whole-program cache (`program_cache`), and
compiled from IR shipped to MPI workers (`shipped`, with paramserv's functions collected by `paramserv_udfs`).
`program` and `program_cache` import no xDSL: a cached run loads them without the compiler."""
