"""GEMM: C[i, j] = sum_k A[i, k] * B[k, j]."""
from __future__ import annotations


from ._base import Operator, Shape


def define(s: Shape):
    from tvm import te  # imported on use: the app's controls render before TVM loads
    A = te.placeholder((s["M"], s["K"]), name="A")
    B = te.placeholder((s["K"], s["N"]), name="B")
    k = te.reduce_axis((0, s["K"]), name="k")
    C = te.compute((s["M"], s["N"]), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


def reference(a, b, dtype="float64"):
    return a.astype(dtype) @ b.astype(dtype)


GEMM = Operator(
    name="gemm", title="GEMM", math="C[i, j] = Σ_k A[i, k] · B[k, j]",
    dims=("M", "N", "K"), inputs=("A", "B"), output="C", define=define,
    input_shapes=lambda s: [(s["M"], s["K"]), (s["K"], s["N"])],
    output_shape=lambda s: (s["M"], s["N"]),
    reference=reference,
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    sizes={"speed test": {"M": 1024, "N": 1024, "K": 1024},
           "large": {"M": 4096, "N": 4096, "K": 4096},
           "tile": {"M": 8, "N": 8, "K": 8}},
)
