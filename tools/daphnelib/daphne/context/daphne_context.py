"""`daphne.context.daphne_context`: DaphneLib's documented import path of `DaphneContext`."""

from daphnec.tools.daphnelib.context import DaphneContext, Frame, Matrix, OperationNode, Scalar

__all__ = ["DaphneContext", "Matrix", "Frame", "Scalar", "OperationNode"]
