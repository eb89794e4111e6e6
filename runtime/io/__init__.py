"""File I/O behind `readMatrix`, `readFrame` and `write`: the `.meta` sidecar, CSV, Matrix Market and DAPHNE's
binary `.dbdf` format, and atomic writes. The kernels in `runtime/kernels/io.py` dispatch on the file extension.

Decisions (DAPHNE's behaviour unless marked as a daphnec choice):

- Types come from `<file>.meta`, read while compiling when the file name is a constant
  (`compiler/analysis/infer_io.py`); a missing or malformed `.meta` is a compile error (exit 2) naming the file and
  the key. A file name that is not a compile-time constant is a compile error too, as the type of the data would be
  unknown.
- Run-time problems (missing data file, malformed rows, unsupported extension, unwritable folder) are execution
  errors (exit 3) naming the file and, for text formats, the line.
- `.mtx` needs a `.meta` like every other format (DAPHNE reads it at compile time for any extension); its header's
  shape must agree with it. integer files correspond to si64, real and pattern files to f64 (MMFile::elementType).
- A CSV read as CSR (a `rep[sparse]` result) holds `row,col` positions, one per line, `numNonZeros` of them, each
  with value 1 (ReadCsvFile<CSRMatrix>); `.mtx` and `.dbdf` give CSR or dense as the IR type asks.
- daphnec choices: a CSV cell that is not a number is an error (DAPHNE reads NaN or 0); integers are parsed with
  64 bits (DAPHNE's atoi truncates to 32); `write` also writes `.mtx`; a `bool` value type is accepted in `.meta`
  files; a file with zero rows reads as an empty matrix; a script that writes a constant file name before reading
  it gets the written type at compile time.

Heavy libraries (pyarrow, fast_matrix_market, scipy.sparse) are imported inside the functions that need them, so
compiling a script that does no I/O never pays for them.
"""
