"""A's shared tile stored k-major (the transpose_a knob) on the H200, against best and cuBLAS in one process.

Stored as best stores it, A_shared[m][k], a thread with an 8-row patch reads 4 k steps of each row in one
128-bit load, so it holds 32 values of A at once, and with 8x8 patches nvcc runs out of registers to load the
next k step while multiplying (129-167 registers, shared loads waited on: data/h200_gemm_stalls.json).
Transposed, A_shared[k][m], the 8 values of one k step are two 128-bit loads; with B's columns interleaved in
groups of 4 (interleave=true) the 16 threads along n read 256 contiguous bytes, and no bank twice.

    python3 -m bench.kmajor OUT_DIR RUN [NAMES [SIZES]]   (bench/device_run27.sh, 29, 32, 33) -> OUT_DIR/kmajor_RUN.json
    python3 -m bench.kmajor --launch NAMES         (under ncu: bench/device_run28.sh, bench/device_run29.sh)
    python -m bench.kmajor --record RUN27_JSON RUN29_JSON   -> data/h200_kmajor.json

Runs 27-29 applied the layout by patching the schedule before the knob existed; the knob's CUDA is byte-identical
for every variant here (checked at 4096^3).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
P8 = "patch_m=8,patch_n=8"
VARIANTS = {            # name -> knobs over the 64x64 tiles of 8x4 (best when these ran; "" = those tiles)
    "best": "",
    "km-best": "transpose_a=true",
    "km128p8k16": f"tile_m=128,tile_n=128,{P8},k_split=16,transpose_a=true",
    "km128p8k8": f"tile_m=128,tile_n=128,{P8},k_split=8,transpose_a=true",
    "km128p8k16-2b": f"tile_m=128,tile_n=128,{P8},k_split=16,one_barrier=false,transpose_a=true",
    "km128x64p8k16": f"tile_m=128,tile_n=64,{P8},k_split=16,transpose_a=true",
    "km64x128p8k16": f"tile_m=64,tile_n=128,{P8},k_split=16,transpose_a=true",
    "km64p8k32": f"tile_m=64,tile_n=64,{P8},k_split=32,transpose_a=true",
    "km128p8x4k16": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,transpose_a=true",
    # B's columns interleaved in groups of 4 as well: a thread's 8 columns are two float4s tile_n / 2 apart
    "kmi128p8k16": f"tile_m=128,tile_n=128,{P8},k_split=16,interleave=true,transpose_a=true",
    "kmi128p8k8": f"tile_m=128,tile_n=128,{P8},k_split=8,interleave=true,transpose_a=true",
    "kmi64x128p8k16": f"tile_m=64,tile_n=128,{P8},k_split=16,interleave=true,transpose_a=true",
    "kmi128x64p8k16": f"tile_m=128,tile_n=64,{P8},k_split=16,interleave=true,transpose_a=true",
    "kmi64p8k16": f"tile_m=64,tile_n=64,{P8},k_split=16,interleave=true,transpose_a=true",
    # 128 outputs per thread, as cuBLAS's kernel (8x16 of a 256x128 tile): 201-213 registers built here, no
    # spills, 9% of the k loop not multiply-adds; 2 warps per scheduler
    "kmi128p8x16k16": "tile_m=128,tile_n=128,patch_m=8,patch_n=16,k_split=16,interleave=true,transpose_a=true",
    "kmi128p16x8k16": "tile_m=128,tile_n=128,patch_m=16,patch_n=8,k_split=16,interleave=true,transpose_a=true",
    "kmi128x256p8x16k8": "tile_m=128,tile_n=256,patch_m=8,patch_n=16,k_split=8,interleave=true,transpose_a=true",
    "kmi256x128p16x8k8": "tile_m=256,tile_n=128,patch_m=16,patch_n=8,k_split=8,interleave=true,transpose_a=true",
    "kmi128p8x16k8": "tile_m=128,tile_n=128,patch_m=8,patch_n=16,k_split=8,interleave=true,transpose_a=true",
}


def knobs(s: dict, name: str):
    """A variant's knobs for shape s: the 8x4 tiles (BEST_FEW_OUTPUTS' GEMM entry) with the variant's changes."""
    return over_8x4(s, VARIANTS[name])


def over_8x4(s: dict, changes: str):
    """The 8x4 tiles' knobs for shape s with `changes` (knob text) applied."""
    from kernels.knobs import BEST_FEW_OUTPUTS, resolve
    base = dict(BEST_FEW_OUTPUTS[("gemm", "cuda")][1])
    base.update(x.split("=") for x in changes.split(",") if x)
    return resolve("gemm", "cuda", s, None, ",".join(f"{k}={str(v).lower()}" for k, v in base.items()))


def _module(s: dict, name: str):
    from kernels import build
    k = knobs(s, name)
    return k, build.compiled("gemm", tuple(s.items()), k, "cuda")[1]


def measure(out_dir: str, run: int, names=None, sizes=(4096, 1024)) -> None:
    from kernels import build
    from kernels.knobs import knobs_text
    from .splitk import experiment_doc, gemm_row
    doc = experiment_doc(f"bash bench/device_run{run}.sh (python3 -m bench.kmajor)")
    for n in sizes:
        s, row = gemm_row(n)
        for name in names or VARIANTS:
            k, mod = _module(s, name)
            med, spread, rel = build.time_module("gemm", s, mod, "cuda", 7)
            row["runs"][name] = {"knobs": knobs_text(k), "median_ms": med, "spread_ms": spread, "rel_err": rel,
                                 "ok": rel < build.TOLERANCE}
            print(n, name, f"{med:.4f}", f"{row['reference']['median_ms'] / med:.3f}x", flush=True)
        doc["shapes"].append(row)
    json.dump(doc, open(f"{out_dir}/kmajor_{run}.json", "w"), indent=1)


def launch(names) -> None:
    """Each named variant and cuBLAS once at 4096^3 (under ncu)."""
    from .why_gemm import launch_4096
    s = {"M": 4096, "N": 4096, "K": 4096}
    launch_4096(_module(s, name)[1] for name in names)
    print("launched", *names, flush=True)


def record(*runs: str) -> None:
    """The timing runs, merged per shape, -> data/h200_kmajor.json (the stall reasons go to h200_gemm_stalls).
    Each run's knobs are written as the knob text the patched schedule equals (the same CUDA)."""
    from kernels.knobs import knobs_text
    docs = [json.load(open(p)) for p in runs]
    out = {k: v for k, v in docs[0].items() if k not in ("shapes", "date", "command")}
    for d in docs:          # (the runs' own name for this module, and the patch's layout pad, always 4)
        d["command"] = d["command"].replace("bench._probe_kmajor", "bench.kmajor")
        for row in d["shapes"]:
            for name, r in row["runs"].items():   # the patch ran before the knob: the knob text it equals
                r.pop("kmajor_pad", None)
                r["knobs"] = knobs_text(knobs(row["shape"], name))
    out["runs"] = [{"date": d["date"], "command": d["command"], "shapes": d["shapes"]} for d in docs]
    out["note"] = __doc__.strip().splitlines()[-2] + " " + __doc__.strip().splitlines()[-1]
    json.dump(out, open(DATA / "h200_kmajor.json", "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--launch":
        launch(sys.argv[2].split(","))
    elif sys.argv[1] == "--record":
        record(*sys.argv[2:])
    else:           # OUT_DIR RUN [NAMES [SIZES]]
        measure(sys.argv[1], int(sys.argv[2]), *([sys.argv[3].split(",")] if sys.argv[3:] else []),
                *([tuple(map(int, sys.argv[4].split(",")))] if sys.argv[4:] else []))
