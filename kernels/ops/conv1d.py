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


def padded_taps(N: int, k_split: int) -> int:
    """The taps the padded definition sums over: N, or N padded up to whole k tiles where that adds at most
    N / 8 zero taps (at 255347x980 in k tiles of 128, 1024: the last k tile then needs no test either; at
    100000x129 it would double the multiply-adds, so N stays)."""
    padded = -(-N // k_split) * k_split
    return padded if (padded - N) * 8 <= N else N


def pads(s: Shape, tile: int, k_split: int) -> bool:
    """Whether define_padded pads anything: the outputs to whole tiles, or the taps to whole k tiles."""
    return (s["M"] + s["N"] - 1) % tile > 0 or padded_taps(s["N"], k_split) > s["N"]


def define_padded(s: Shape, tiles: tuple, splits: tuple):
    """The same convolution with the output padded up to whole tiles of tiles[0] (C_pad, whose first M + N - 1
    entries are copied to C) and the taps to padded_taps: A_pad reads zeros beyond the signal's ends, W_pad
    beyond the last tap, so a tile's multiply-adds test no bounds; only the copies and the write-back of C do.
    The taps are padded at W's end and A_pad gets the same number of extra leading zeros:
    C_pad[i] = Σ_{k < Np} A_pad[i + k] · W_pad[Np - 1 - k], A_pad[x] = A[x - (Np - 1)]."""
    from tvm import te, tirx
    if not pads(s, tiles[0], splits[0]):
        return define(s)
    M, N = s["M"], s["N"]
    L = M + N - 1
    Mp, Np = -(-L // tiles[0]) * tiles[0], padded_taps(N, splits[0])
    zero = tirx.const(0.0, "float32")
    A = te.placeholder((M,), name="A")
    W = te.placeholder((N,), name="W")
    A_pad = te.compute((Mp + Np - 1,), lambda x: te.if_then_else(tirx.all(x >= Np - 1, x < M + Np - 1),
                                                                A[x - (Np - 1)], zero), name="A_pad")
    k = te.reduce_axis((0, Np), name="k")
    if Np > N:
        W_pad = te.compute((Np,), lambda t: te.if_then_else(t < N, W[t], zero), name="W_pad")
        C_pad = te.compute((Mp,), lambda i: te.sum(A_pad[i + k] * W_pad[Np - 1 - k], axis=k), name="C_pad")
    else:
        C_pad = te.compute((Mp,), lambda i: te.sum(A_pad[i + k] * W[N - 1 - k], axis=k), name="C_pad")
    C = te.compute((L,), lambda i: C_pad[i], name="C")
    return [A, W, C]


def reference(a, w, dtype="float64"):
    return np.convolve(a.astype(dtype), w.astype(dtype))


CONV1D = Operator(
    name="conv1d", title="1D convolution", math="C[i] = Σ_k A[i − k] · W[k],  i < M + N − 1",
    dims=("M", "N"), inputs=("A", "W"), output="C", define=define,
    input_shapes=lambda s: [(s["M"],), (s["N"],)],
    output_shape=lambda s: (s["M"] + s["N"] - 1,),
    reference=reference, define_padded=define_padded,
    flops=lambda s: 2 * s["M"] * s["N"],
    sizes={"speed test": {"M": 1024, "N": 1024},
           "large": {"M": 1 << 20, "N": 1024},
           "tile": {"M": 16, "N": 4}},
)
