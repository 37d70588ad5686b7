"""Launch each reference library call once (run under ncu): the libraries' device time per kernel, to set
beside the TVM kernels' gpu__time_duration (host launch overhead excluded on both sides).

    ncu --metrics gpu__time_duration.sum --csv python3 -m bench.ref_ncu
"""
from __future__ import annotations

import numpy as np

from kernels import build
from kernels.ops import OPS

ROWS = [("gemm", {"M": 1024, "N": 1024, "K": 1024}), ("conv1d", {"M": 1024, "N": 1024}),
        ("dwconv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3}),
        ("dwconv2d", {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3})]


def main() -> None:
    import torch
    for op, shape in ROWS:
        xs = OPS[op].random_inputs(shape, np.random.default_rng(0))
        name, fn, sync = build.reference_timer(op, "cuda", xs)
        torch.cuda.synchronize()
        print(f"reference {op} {shape}: {name}", flush=True)
        fn()
        sync()
        torch.cuda._sleep(1000)         # a marker kernel between rows
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
