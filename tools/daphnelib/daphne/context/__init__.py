"""`daphne.context`: DaphneContext and the lazy value classes (DaphneLib's `daphne/context/__init__.py`)."""

from daphnec.tools.daphnelib import DaphneContext, Frame, Matrix, Scalar

__all__ = ["DaphneContext", "Matrix", "Frame", "Scalar"]
