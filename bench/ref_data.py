"""Turn the ncu log of bench/ref_ncu.py into data/h200_ref_kernels.json: the reference libraries' kernels
and their device time (gpu__time_duration, no host launch overhead), beside the TVM `best` kernel's device
time for the same shape read in the same device session (data/ncu_h200.csv).

    python -m bench.ref_data REF_NCU_CSV DATE COMMAND
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from .ncu_data import rows
from .ref_ncu import ROWS

DATA = Path(__file__).resolve().parent.parent / "data"


def parse(text: str) -> list[list[tuple[str, float]]]:
    """Per reference row, in launch order: (kernel name, device ns) of each kernel before the row's marker."""
    groups, cur = [], []
    for r in sorted(rows(text), key=lambda r: int(r["ID"])):
        name, ns = r["Kernel Name"], float(r["Metric Value"].replace(",", ""))
        if "spin_kernel" in name:
            groups.append(cur)
            cur = []
        else:
            cur.append((name, ns))
    return groups


def main(ref_csv: str, date: str, command: str) -> None:
    groups = parse(open(ref_csv).read())
    ncu = pd.read_csv(DATA / "ncu_h200.csv")
    out = []
    for (op, shape), kernels in zip(ROWS, groups):
        name, ns = kernels[-1]              # the replayed call (the earlier ones are warm-up and capture)
        best = ncu[(ncu["op"] == op) & (ncu["shape"] == json.dumps(shape)) & (ncu["preset"] == "best") &
                   (ncu["overrides"] == ncu["knobs"])]          # the shipped best itself, not a variation of it
        tvm_ns = float(best["gpu__time_duration.sum"].iloc[0]) if len(best) else None
        out.append({"op": op, "shape": shape, "reference_kernel": name, "reference_ns": ns,
                    "best_ns": tvm_ns, "best_date": best["date"].iloc[0] if len(best) else None})
    every = [k for g in groups for k in g]
    small = min(every, key=lambda k: k[1])
    doc = {"device": "NVIDIA H200", "date": date, "command": command,
           "smallest_kernel": {"name": small[0], "ns": small[1],
                               "why": "the shortest device time of any kernel in the log (a fill of a few "
                                      "elements): about what one launch costs on the GPU, whatever it does"},
           "metric": "gpu__time_duration.sum (ncu --clock-control none), one launch each", "rows": out}
    json.dump(doc, open(DATA / "h200_ref_kernels.json", "w"), indent=1)
    for r in out:
        print(r["op"], r["shape"], r["reference_kernel"][:50], r["reference_ns"], "best", r["best_ns"])


if __name__ == "__main__":
    main(*sys.argv[1:4])
