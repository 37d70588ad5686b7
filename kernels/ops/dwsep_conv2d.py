"""Depthwise-separable 2D convolution: the depthwise stage D, then a 1x1 pointwise conv to F channels."""
from __future__ import annotations


from ._base import Operator, Shape
from .dwconv2d import depthwise, odd_kernel, padded
from .dwconv2d import reference as depthwise_reference


def define(s: Shape):
    from tvm import te  # imported on use: the app's controls render before TVM loads
    X = te.placeholder((s["B"], s["C"], s["H"], s["W"]), name="X")
    Wd = te.placeholder((s["C"], 1, s["K"], s["K"]), name="W")
    Wp = te.placeholder((s["F"], s["C"], 1, 1), name="P")
    D = depthwise(padded(X, s), Wd, s, "D")
    return [X, Wd, Wp, pointwise(D, Wp, s)]


def pointwise(D, Wp, s: Shape):
    """The second stage: C[b, f, h, w] = sum_c D[b, c, h, w] P[f, c] (a 1x1 convolution to F channels)."""
    from tvm import te
    c = te.reduce_axis((0, s["C"]), name="c")
    return te.compute((s["B"], s["F"], s["H"], s["W"]),
                      lambda b, f, h, w: te.sum(D[b, c, h, w] * Wp[f, c, 0, 0], axis=c), name="C")


def reference(x, wd, wp, dtype="float64"):
    d = depthwise_reference(x, wd, dtype)
    B, C, H, W = d.shape
    p = wp[:, :, 0, 0].astype(dtype)
    return (p @ d.reshape(B, C, H * W)).reshape(B, -1, H, W)


DWSEP_CONV2D = Operator(
    name="dwsep_conv2d", title="Depthwise-separable 2D convolution",
    math="D = depthwise(X, W);  C[b, f, h, w] = Σ_c D[b, c, h, w] · P[f, c]",
    dims=("B", "C", "H", "W", "K", "F"), inputs=("X", "W", "P"), output="C", define=define,
    input_shapes=lambda s: [(s["B"], s["C"], s["H"], s["W"]), (s["C"], 1, s["K"], s["K"]), (s["F"], s["C"], 1, 1)],
    output_shape=lambda s: (s["B"], s["F"], s["H"], s["W"]),
    reference=reference,
    flops=lambda s: 2 * s["B"] * s["H"] * s["W"] * s["C"] * (s["K"] * s["K"] + s["F"]),
    shape_rules=odd_kernel,
    sizes={"speed test": {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3, "F": 8},
           "large": {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3, "F": 64},
           "tile": {"B": 1, "C": 2, "H": 8, "W": 8, "K": 3, "F": 2}},
)
