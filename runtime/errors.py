"""The one exception type kernels raise; host code adds the source location and exit code 3."""


class DaphneRuntimeError(Exception):
    """A run-time failure inside a kernel (shape mismatch, bad argument, `stop()`, ...)."""


class StopRequested(DaphneRuntimeError):
    """`stop([message])` ended the script (reported on standard output, not as an error)."""
