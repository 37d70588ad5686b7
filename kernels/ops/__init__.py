"""The operators: each one's TE definition, float64 reference, FLOPs and minimum bytes."""
from ._base import Operator, Shape, rel_error
from .conv1d import CONV1D
from .dwconv2d import DWCONV2D
from .dwsep_conv2d import DWSEP_CONV2D
from .gemm import GEMM

OPS: dict[str, Operator] = {op.name: op for op in (GEMM, CONV1D, DWCONV2D, DWSEP_CONV2D)}

__all__ = ["OPS", "Operator", "Shape", "rel_error"]
