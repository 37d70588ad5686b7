"""Depthwise 2D convolution, NCHW, odd K, stride 1, zero padding (K-1)/2 (torch conv2d with groups=C)."""
from __future__ import annotations

import numpy as np

from ._base import Operator, Shape


def padded(X, s: Shape, name: str = "X_pad"):
    from tvm import te, tirx  # imported on use: the app's controls render before TVM loads
    B, C, H, W, K = s["B"], s["C"], s["H"], s["W"], s["K"]
    p = (K - 1) // 2
    return te.compute(
        (B, C, H + 2 * p, W + 2 * p),
        lambda b, c, h, w: te.if_then_else(
            tirx.all(h >= p, h < H + p, w >= p, w < W + p), X[b, c, h - p, w - p], tirx.const(0.0, "float32")),
        name=name,
    )


def depthwise(X_pad, Wt, s: Shape, name: str):
    from tvm import te  # imported on use: the app's controls render before TVM loads
    K = s["K"]
    ry = te.reduce_axis((0, K), name="ry")
    rx = te.reduce_axis((0, K), name="rx")
    return te.compute(
        (s["B"], s["C"], s["H"], s["W"]),
        lambda b, c, h, w: te.sum(X_pad[b, c, h + ry, w + rx] * Wt[c, 0, ry, rx], axis=[ry, rx]),
        name=name,
    )


def define(s: Shape):
    from tvm import te  # imported on use: the app's controls render before TVM loads
    X = te.placeholder((s["B"], s["C"], s["H"], s["W"]), name="X")
    Wt = te.placeholder((s["C"], 1, s["K"], s["K"]), name="W")
    return [X, Wt, depthwise(padded(X, s), Wt, s, "C")]


def reference(x, w, dtype="float64"):
    x = x.astype(dtype)
    w = w.astype(dtype)
    K = w.shape[-1]
    p = (K - 1) // 2
    H, W = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    out = np.zeros(x.shape, dtype)
    for ry in range(K):
        for rx in range(K):
            out += xp[:, :, ry:ry + H, rx:rx + W] * w[None, :, 0, ry, rx, None, None]
    return out


def odd_kernel(s: Shape) -> list[str]:
    if s["K"] % 2 == 0:
        return [f"K={s['K']} is even; depthwise 'same' padding needs an odd kernel size such as {s['K'] + 1}."]
    return []


DWCONV2D = Operator(
    name="dwconv2d", title="Depthwise 2D convolution",
    math="C[b, c, h, w] = Σ_{ry, rx} X_pad[b, c, h + ry, w + rx] · W[c, 0, ry, rx]",
    dims=("B", "C", "H", "W", "K"), inputs=("X", "W"), output="C", define=define,
    input_shapes=lambda s: [(s["B"], s["C"], s["H"], s["W"]), (s["C"], 1, s["K"], s["K"])],
    output_shape=lambda s: (s["B"], s["C"], s["H"], s["W"]),
    reference=reference,
    flops=lambda s: 2 * s["B"] * s["C"] * s["H"] * s["W"] * s["K"] * s["K"],
    shape_rules=odd_kernel,
    sizes={"speed test": {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3},
           "large": {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3},
           "tile": {"B": 1, "C": 2, "H": 8, "W": 8, "K": 3}},
)
