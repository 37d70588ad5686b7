"""The course assignment's test shapes (sizes the tiles do not divide included) and the benchmark rows."""
from __future__ import annotations

import itertools

EDGE = (1, 10, 100, 1000, 10000)


def course_shapes(op: str) -> list[dict]:
    if op == "gemm":
        out = [{"M": 1, "N": 1, "K": 2}]
        for v in EDGE:
            for d in "MNK":
                s = {"M": 1024, "N": 1024, "K": 1024}
                s[d] = v
                out.append(s)
        return out
    if op == "conv1d":
        out = [{"M": 1, "N": 1}]
        for v in EDGE:
            out += [{"M": v, "N": 1024}, {"M": 1024, "N": v}]
        return out
    if op == "dwconv2d":
        return [{"B": b, "C": c, "H": h, "W": w, "K": k} for b, c, h, w, k in
                itertools.product((1, 2, 3, 4, 5, 11, 32), (1, 3, 4, 64), (1, 3, 4, 128), (1, 3, 4, 128), (1, 3, 5))]
    if op == "dwsep_conv2d":
        return [{"B": b, "C": c, "H": h, "W": w, "K": k, "F": f} for b, c, h, w, k, f in
                itertools.product((1, 3, 32), (1, 3, 64), (1, 4, 128), (3, 128), (1, 3, 5), (1, 5, 64))]
    raise KeyError(op)


# (op, shape, reference goal as a ratio to the reference library) -- the table
BENCH_ROWS = [
    ("gemm", {"M": 4096, "N": 4096, "K": 4096}, 0.9),
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, 1.2),
    ("conv1d", {"M": 1 << 20, "N": 1024}, 20.0),
    ("conv1d", {"M": 1024, "N": 1024}, 8.0),
    ("dwconv2d", {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3}, 4.0),
    ("dwconv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3}, 10.0),
    ("dwsep_conv2d", {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3, "F": 64}, 1.5),
]
