"""Where in a k tile to issue the next tile's copies, tried on the H200 outside the knobs. Nsight Compute's PC
sampling of best (bench/device_run24.sh) puts 36% of its dispatch stalls on the ~30 address instructions of
the copy block, which sits alone between the barrier and the first multiply-add. With one barrier per k
tile the copies may go anywhere in the tile's compute (the buffer they fill was freed by that barrier):
issued a quarter, half or three quarters of the way in (2 stages: still in flight for the rest of the tile),
or after it (3 stages: in flight while the next tile is computed), nvcc interleaves about half of that
arithmetic with the multiply-adds in the SASS built here, at the same 95 registers.

    python3 -m bench.late_copies OUT_DIR        (on the GPU: bench/device_run26.sh) -> OUT_DIR/late_copies.json
"""
from __future__ import annotations

import json
import sys

VARIANTS = {          # name -> (knobs over best, copies_at: how far into the compute the copies are issued)
    "best": ("", 0.0),
    "at25": ("", 0.25),
    "at50": ("", 0.5),
    "at75": ("", 0.75),
    "s3": ("stages=3", 0.0),
    "s3-late": ("stages=3", 1.0),
}


def measure(out_dir: str) -> None:
    from kernels import build, lowering
    from kernels.knobs import knobs_text, resolve
    from .splitk import experiment_doc, gemm_row
    doc = experiment_doc("bash bench/device_run26.sh (python3 -m bench.late_copies)")
    for n in (4096, 1024):
        s, row = gemm_row(n)
        for name, (text, at) in VARIANTS.items():
            k = resolve("gemm", "cuda", s, "best", text or None)
            sch, _ = build.create("gemm", s, k, "cuda")
            mod = lowering.compile(sch.mod, "cuda", (), k.min_blocks, k.one_barrier, at).jit()
            med, spread, rel = build.time_module("gemm", s, mod, "cuda", 7)
            row["runs"][name] = {"knobs": knobs_text(k), "copies_at": at, "median_ms": med, "spread_ms": spread,
                                 "rel_err": rel, "ok": rel < build.TOLERANCE}
        doc["shapes"].append(row)
        print(n, f"ref {row['reference']['median_ms']:.4f}", " ".join(
            f"{k}={r['median_ms']:.4f}({row['reference']['median_ms'] / r['median_ms']:.3f}x,{'ok' if r['ok'] else 'BAD'})"
            for k, r in row["runs"].items()), flush=True)
    json.dump(doc, open(f"{out_dir}/late_copies.json", "w"), indent=1)


if __name__ == "__main__":
    measure(sys.argv[1])
