"""The one exception type kernels raise; host code adds the source location and exit code 3."""


class DaphneRuntimeError(Exception):
    """A run-time failure inside a kernel (shape mismatch, bad argument, `stop()`, ...)."""
