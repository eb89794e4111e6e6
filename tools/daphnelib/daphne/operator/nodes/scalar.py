"""`daphne.operator.nodes.scalar.Scalar`, as DaphneLib's Overview.md names it."""

from daphnec.tools.daphnelib.scalar import Scalar

__all__ = ["Scalar"]
