"""Shared tiles over 48 KB per block (dynamic shared memory) for GEMM on the H200, against best and cuBLAS.

A block's static shared memory stops at 48 KB; dynamic shared memory (TVM's "shared.dyn" scope, one
`extern __shared__` buffer that TVM's MergeSharedMemoryAllocations lays every tile into, with the runtime
raising the kernel's limit) goes to 227 KB. That allows what the static limit ruled out: k tiles of 64 on the
64x64 tiles of 8x4 (half the barriers and waits per multiply-add at 1024^3, where k tiles of 32 beat 16 by 8%),
and 3 or 4 stages of the 128x128 transposed tiles at 4096^3. The variants are the knob text over the 8x4 tiles
(as bench/kmajor.py) with the shared stages' scope switched to "shared.dyn" by patching the schedule engine in
this process ("dyn-best" is best's own knobs so: what the switch alone costs).

    python3 -m bench.dyn_shared OUT_DIR RUN [NAMES [SIZES]]   (on the GPU: bench/device_run40.sh) -> OUT_DIR/dyn_shared_RUN.json
    python -m bench.dyn_shared --source NAME N > k.cu          (the CUDA source of one variant at N^3, anywhere)
"""
from __future__ import annotations

import json
import sys

from . import kmajor

KM = "tile_m=128,tile_n=128,patch_m=8,patch_n=8,interleave=true,transpose_a=true"
VARIANTS = {            # name -> (knobs over the 64x64 tiles of 8x4, shared stages dynamic)
    "best": ("", False),
    "dyn-best": ("", True),
    "d-k64": ("k_split=64", True),
    "d-k64s3": ("k_split=64,stages=3", True),
    "d-k32s4": ("stages=4", True),
    "d-128x64k64": ("tile_m=128,k_split=64", True),
    "km": (f"{KM},k_split=16", False),
    "d-km": (f"{KM},k_split=16", True),
    "d-kms3": (f"{KM},k_split=16,stages=3", True),
    "d-kms4": (f"{KM},k_split=16,stages=4", True),
    "d-kmk32": (f"{KM},k_split=32", True),
    "d-kmk32s3": (f"{KM},k_split=32,stages=3", True),
}


def _dynamic(on: bool) -> None:
    """Switch the engine's shared stages to "shared.dyn" (and lift the 48 KB check to the 227 KB a block may
    take dynamically), or back."""
    from kernels import build, knobs
    from kernels.schedules import cuda
    if not hasattr(cuda, "_static_cache_read"):
        cuda._static_cache_read = cuda._cache_read
    static = cuda._static_cache_read
    cuda._cache_read = (lambda sch, blk, name, scope, padded:
                        static(sch, blk, name, "shared.dyn" if on and scope == "shared" else scope, padded)) \
        if on else static
    knobs.SHARED_LIMIT = (227 if on else 48) * 1024
    build.compiled.cache_clear()


def _resolved(s: dict, name: str):
    text, dyn = VARIANTS[name]
    _dynamic(dyn)
    return kmajor.over_8x4(s, text)


def measure(out_dir: str, run: int, names=None, sizes=(1024, 4096)) -> None:
    from kernels import build
    from kernels.knobs import knobs_text
    from .splitk import experiment_doc, gemm_row
    doc = experiment_doc(f"bash bench/device_run{run}.sh (python3 -m bench.dyn_shared)")
    for n in sizes:
        s, row = gemm_row(n)
        for name in names or VARIANTS:
            try:
                k = _resolved(s, name)
                mod = build.compiled("gemm", tuple(s.items()), k, "cuda")[1]
                med, spread, rel = build.time_module("gemm", s, mod, "cuda", 7)
            except Exception as e:      # noqa: BLE001 - a variant that fails to build or launch is recorded as such
                row["runs"][name] = {"error": str(e).splitlines()[-1][:300]}
                print(n, name, "failed:", row["runs"][name]["error"], flush=True)
                continue
            row["runs"][name] = {"knobs": knobs_text(k), "dynamic_shared": VARIANTS[name][1], "median_ms": med,
                                 "spread_ms": spread, "rel_err": rel, "ok": rel < build.TOLERANCE}
            print(n, name, f"{med:.4f}", f"{row['reference']['median_ms'] / med:.3f}x", f"rel {rel:.1e}", flush=True)
        doc["shapes"].append(row)
        json.dump(doc, open(f"{out_dir}/dyn_shared_{run}.json", "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--source":
        from kernels import build
        n = int(sys.argv[3])
        s = {"M": n, "N": n, "K": n}
        print(build.source("gemm", s, _resolved(s, sys.argv[2]), "cuda", "cuda"))
    else:           # OUT_DIR RUN [NAMES [SIZES]]
        measure(sys.argv[1], int(sys.argv[2]), *([sys.argv[3].split(",")] if sys.argv[3:] else []),
                *([tuple(map(int, sys.argv[4].split(",")))] if sys.argv[4:] else []))
