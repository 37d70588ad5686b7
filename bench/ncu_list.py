"""The kernels profiled with Nsight Compute: every shipped preset of every operator, a spread of knob
settings (each cache scope, vector widths, patches) and shapes the tiles do not divide."""
from __future__ import annotations

import json
import sys

from kernels.ops import OPS

PRESETS = ("baseline", "naive", "seed", "best")

SPREAD = [
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, "seed", "cache_a=shared,cache_b=shared"),
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, "best", "vector=1"),
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, "seed", "cache_a=global,cache_b=local"),
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, "best",
     "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8"),
    ("gemm", {"M": 1000, "N": 1024, "K": 1024}, "seed", None),
    ("gemm", {"M": 1000, "N": 1024, "K": 1024}, "best", None),
    ("gemm", {"M": 100, "N": 100, "K": 100}, "best", None),
    ("gemm", {"M": 1024, "N": 1024, "K": 1000}, "naive", None),
    ("conv1d", {"M": 1024, "N": 1024}, "seed", "cache_a=shared,cache_w=shared"),
    ("conv1d", {"M": 1024, "N": 1024}, "seed", "cache_a=shared+local,cache_w=local,patch=8"),
    ("conv1d", {"M": 1000, "N": 100}, "seed", None),
    ("conv1d", {"M": 1000, "N": 100}, "best", None),
    ("conv1d", {"M": 65536, "N": 1024}, "best", None),         # the long-signal best (taps in shared memory)
    ("gemm", {"M": 1024, "N": 1024, "K": 1024}, "best", "async_copy=false"),
    ("dwconv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3}, "seed", "cache_x=shared"),
    ("dwconv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3}, "seed", "cache_x=global,patch_w=4,vector=4"),
    ("dwconv2d", {"B": 3, "C": 4, "H": 100, "W": 100, "K": 5}, "seed", None),
    ("dwconv2d", {"B": 3, "C": 4, "H": 100, "W": 100, "K": 5}, "best", None),
    ("dwsep_conv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3, "F": 8}, "best", "cache_d=local"),
    ("dwsep_conv2d", {"B": 2, "C": 6, "H": 50, "W": 50, "K": 3, "F": 10}, "best", None),
]


def items(picks: dict | None = None) -> list[dict]:
    """With picks (bench/picks.py), `best` rows carry the picked knobs explicitly."""
    from kernels.knobs import knobs_text, resolve
    from .picks import best_knobs
    out = []
    for op, o in OPS.items():
        for p in PRESETS:
            out.append({"op": op, "shape": dict(o.sizes["speed test"]), "preset": p, "knobs": None})
    out += [{"op": op, "shape": s, "preset": p, "knobs": k} for op, s, p, k in SPREAD]
    if picks:
        for it in out:
            if it["preset"] == "best":
                base = best_knobs(it["op"], it["shape"], picks)
                k = resolve(it["op"], "cuda", it["shape"], None, knobs_text(base) + "," + (it["knobs"] or ""))
                it["knobs"] = knobs_text(k)
    return out


if __name__ == "__main__":
    picks = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else None
    json.dump(items(picks), open(sys.argv[1], "w"), indent=1)
    print(len(items(picks)), "kernels")
