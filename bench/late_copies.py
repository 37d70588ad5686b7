"""Late copies, tried on the H200 outside the knobs (it lost, so no knob offers it): with three or more pipeline stages and one barrier per k
tile, the copies of tile k+S-1 can be issued after tile k's multiply-adds instead of before them (the buffer
they fill was freed by the same barrier, and they are still in flight while the next S-2 tiles are computed).
Nsight Compute's PC sampling of best (bench/device_run24.sh) puts 36% of its dispatch stalls on the ~30
address instructions of the copy block, which sits alone between the barrier and the first multiply-add;
issued late, nvcc interleaves part of that arithmetic with the multiply-adds (16 of 48 integer instructions
in the SASS built here). Measured: slower than best at both sizes (data/h200_late_copies.json).

    python3 -m bench.late_copies OUT_DIR        (on the GPU: bench/device_run25.sh) -> OUT_DIR/late_copies.json
"""
from __future__ import annotations

import json
import sys

VARIANTS = {          # name -> (knobs over best, copies late)
    "best": ("", False),
    "s3": ("stages=3", False),
    "s3-late": ("stages=3", True),
    "k16s3": ("k_split=16,stages=3", False),
    "k16s3-late": ("k_split=16,stages=3", True),
}


def measure(out_dir: str) -> None:
    from kernels import build, lowering
    from kernels.knobs import knobs_text, resolve
    from .splitk import experiment_doc, gemm_row
    doc = experiment_doc("bash bench/device_run25.sh (python3 -m bench.late_copies)")
    for n in (4096, 1024):
        s, row = gemm_row(n)
        for name, (text, late) in VARIANTS.items():
            k = resolve("gemm", "cuda", s, "best", text or None)
            sch, _ = build.create("gemm", s, k, "cuda")
            mod = lowering.compile(sch.mod, "cuda", (), k.min_blocks, k.one_barrier, late).jit()
            med, spread, rel = build.time_module("gemm", s, mod, "cuda", 7)
            row["runs"][name] = {"knobs": knobs_text(k), "late": late, "median_ms": med, "spread_ms": spread,
                                 "rel_err": rel, "ok": rel < build.TOLERANCE}
        doc["shapes"].append(row)
        print(n, f"ref {row['reference']['median_ms']:.4f}", " ".join(
            f"{k}={r['median_ms']:.4f}({row['reference']['median_ms'] / r['median_ms']:.3f}x,{'ok' if r['ok'] else 'BAD'})"
            for k, r in row["runs"].items()), flush=True)
    json.dump(doc, open(f"{out_dir}/late_copies.json", "w"), indent=1)


if __name__ == "__main__":
    measure(sys.argv[1])
