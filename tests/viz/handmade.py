"""Hand-built traces of a small GEMM (one block, one output per thread): no TVM, no simulator."""
from __future__ import annotations

from kernels.records import Access, Trace


def gemm_trace(mode: str = "shared", M: int = 2, N: int = 2, K: int = 2) -> Trace:
    recs = []

    def add(phase, thread, tensor, index, level, kind, buffer=""):
        recs.append(Access(len(recs), phase, 0, thread, tensor, index, level, kind, buffer or tensor))

    threads = [(i, j) for i in range(M) for j in range(N)]
    phase = 0
    if mode == "shared":                     # cooperative fill: thread t copies A and B element t
        for t in range(M * N):
            a, b = (t // K, t % K), (t // N, t % N)
            if a[0] < M:
                add(0, t, "A", a, "global", "read")
                add(0, t, "A", a, "shared", "write", "A_shared")
            if b[0] < K:
                add(0, t, "B", b, "global", "read")
                add(0, t, "B", b, "shared", "write", "B_shared")
        recs.append(Access(len(recs), 0, 0, 0, "", (), "shared", "barrier"))
        phase = 1
    level = {"naive": "global", "shared": "shared", "register": "register"}[mode]
    for t, (i, j) in enumerate(threads):
        for k in range(K):
            if mode == "register":           # each element first lands in a register, then is reused there
                add(phase, t, "A", (i, k), "global", "read")
            add(phase, t, "A", (i, k), level, "read")
            add(phase, t, "B", (k, j), level, "read")
        add(phase, t, "C", (i, j), "global", "write")
    return Trace("gemm", {"M": M, "N": N, "K": K}, "cuda", mode, tuple(recs), 1, M * N,
                 {"A": (M, K), "B": (K, N), "C": (M, N)}, ("A", "B"), "C")
