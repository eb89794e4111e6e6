"""`daphne.operator.operation_node`: the base class of DaphneLib's lazy values."""

from daphnec.tools.daphnelib.operation_node import OperationNode

__all__ = ["OperationNode"]
