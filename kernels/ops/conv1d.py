"""Full 1D convolution: C[i] = Σ_k A[i - k] · W[k], output length M + N - 1 (np.convolve)."""
from __future__ import annotations

import numpy as np

from ._base import Operator, Shape


def define(s: Shape):
    from tvm import te, tirx  # imported on use: the app's controls render before TVM loads
    M, N = s["M"], s["N"]
    A = te.placeholder((M,), name="A")
    W = te.placeholder((N,), name="W")
    # Zero-pad N-1 on both sides so the reduction reads A_pad[i + k] with no bounds test.
    A_pad = te.compute(
        (M + 2 * (N - 1),),
        lambda i: te.if_then_else(tirx.all(i >= N - 1, i < M + N - 1), A[i - (N - 1)], tirx.const(0.0, "float32")),
        name="A_pad",
    )
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((M + N - 1,), lambda i: te.sum(A_pad[i + k] * W[N - 1 - k], axis=k), name="C")
    return [A, W, C]


def reference(a, w, dtype="float64"):
    return np.convolve(a.astype(dtype), w.astype(dtype))


CONV1D = Operator(
    name="conv1d", title="1D convolution", math="C[i] = Σ_k A[i − k] · W[k],  i < M + N − 1",
    dims=("M", "N"), inputs=("A", "W"), output="C", define=define,
    input_shapes=lambda s: [(s["M"],), (s["N"],)],
    output_shape=lambda s: (s["M"] + s["N"] - 1,),
    reference=reference,
    flops=lambda s: 2 * s["M"] * s["N"],
    sizes={"speed test": {"M": 1024, "N": 1024},
           "large": {"M": 1 << 20, "N": 1024},
           "tile": {"M": 16, "N": 4}},
)
