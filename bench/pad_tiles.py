"""GEMM where the tiles do not divide M or N, on the H200: the runs that led to `interleave` padding its last
block tile and to the `pad_tiles` knob, merged into data/h200_pad_tiles.json (each run keeps its date, command
and what the code did when it ran). Each run is bench.ratio_spread with --variant: best, the variant and cuBLAS
timed alternately, five rounds, every kernel verified against float64 first.

    python -m bench.pad_tiles RUN34.json RUN35.json RUN36_ALL.json RUN36_MN.json RUN37.json
    python -m bench.pad_tiles --sweep SWEEP_DIR        (run 37's GEMM sweep -> data/h200_sweep_gemm.json)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
RUNS = [   # (run, what best and the variant were when it ran)
    (34, "best: B interleaved with the layout padded at the edge (commit 8411f73); variant: interleave=false, "
         "which is what best ran at these shapes before (the edge dropped interleave)"),
    (35, "variant: pad_tiles=true over best, padding M, N and K (commit 67f4091)"),
    (36, "variant: pad_tiles=true over best, padding M, N and K (KERNEL_LAB_PAD_K=1, commit 67f4091)"),
    (36, "variant: pad_tiles=true over best, padding M and N only (KERNEL_LAB_PAD_K=0), as the knob now does"),
    (37, "best as it ships (pad_tiles on: M and N padded); variant: pad_tiles=false, the guarded kernel"),
]


def record(*paths: str) -> None:
    docs = [json.load(open(p)) for p in paths]
    assert len(docs) == len(RUNS), f"give the {len(RUNS)} runs in the order of RUNS"
    out = {"device": docs[0]["device"], "versions": docs[0]["versions"], "method": docs[0]["method"],
           "note": __doc__.strip().splitlines()[0] + " " + __doc__.strip().splitlines()[1],
           "runs": [{"run": n, "what": what, **d} for (n, what), d in zip(RUNS, docs)]}
    json.dump(out, open(DATA / "h200_pad_tiles.json", "w"), indent=1)


def sweep(run_dir: str) -> None:
    """The GEMM sweep of bench/device_run37.sh with its summary, as data/h200_sweep_gemm.json."""
    d = Path(run_dir)
    summary = json.load(open(d / "sweep_summary.json"))
    out = {"device": "NVIDIA H200", "date": (d / "started").read_text().strip(),
           "command": "bash bench/device_run37.sh (bench.h200 sweep --ops gemm --budget-s 200 --workers 15)",
           "what": "the GEMM part of the correctness sweep with the presets as they ship (best: pad_tiles where "
                   "the tiles do not divide M or N, interleave kept there): every course shape x every preset, "
                   "against float64 on fresh inputs",
           **{k: summary[k] for k in ("jobs", "done", "passed")},
           "rows": [json.loads(line) for line in open(d / "sweep.jsonl") if line.strip()]}
    json.dump(out, open(DATA / "h200_sweep_gemm.json", "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--sweep":
        sweep(sys.argv[2])
    else:
        record(*sys.argv[1:])
