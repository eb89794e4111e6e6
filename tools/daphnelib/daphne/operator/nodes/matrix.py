"""`daphne.operator.nodes.matrix.Matrix`, as DaphneLib's Overview.md names it."""

from daphnec.tools.daphnelib.matrix import Matrix

__all__ = ["Matrix"]
