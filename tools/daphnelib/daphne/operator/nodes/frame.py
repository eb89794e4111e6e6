"""`daphne.operator.nodes.frame.Frame`, as DaphneLib's Overview.md names it."""

from daphnec.tools.daphnelib.frame import Frame

__all__ = ["Frame"]
