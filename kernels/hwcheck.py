"""The simulator against the hardware: Nsight Compute counters recorded on the H200 (data/ncu_h200.csv)
next to the counts predicted from the same schedules' lowered TensorIR."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .knobs import has_remainder, resolve
from .traffic import counts

DATA = Path(__file__).resolve().parent.parent / "data" / "ncu_h200.csv"
METRICS = {
    "smsp__inst_executed_op_global_ld.sum": "global load instr.",
    "smsp__inst_executed_op_global_st.sum": "global store instr.",
    "smsp__inst_executed_op_shared_ld.sum": "shared load instr.",
    "smsp__inst_executed_op_shared_st.sum": "shared store instr.",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "smsp__inst_executed_op_ldgsts.sum": "async copy instr. (LDGSTS)",
}
# The agreement the model promises: global instructions and sectors exact where tiles divide the shape,
# within 2% otherwise; shared-memory instructions within 2%.
EXACT_WHEN_DIVIDED = ("smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
                      "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "smsp__inst_executed_op_ldgsts.sum")
TOLERANCE = 0.02


def recorded(path: Path = DATA) -> pd.DataFrame:
    return pd.read_csv(path)


def allowed(metric: str, divides: bool) -> float:
    return 0.0 if divides and metric in EXACT_WHEN_DIVIDED else TOLERANCE


def compare(path: Path = DATA) -> pd.DataFrame:
    """One row per (kernel, metric): measured, predicted, relative difference, allowed, within."""
    rows = []
    for _, r in recorded(path).iterrows():
        shape = json.loads(r["shape"])
        preset = r["preset"] if isinstance(r["preset"], str) and r["preset"] else None
        # the knobs the kernel was measured with (a knob added since takes its default, which is what ran)
        k = resolve(r["op"], "cuda", shape, None, r["knobs"])
        c = counts(r["op"], shape, k, "cuda")
        divides = not has_remainder(k, shape)
        for m, label in METRICS.items():
            if m not in r or pd.isna(r[m]):
                continue                # a metric not recorded for this kernel (read before it was added)
            meas, pred = int(r[m]), c.ncu.get(m)
            diff = None if pred is None else (pred - meas) / max(meas, 1)
            rows.append({"op": r["op"], "shape": r["shape"], "preset": preset or "",
                         "overrides": r["overrides"] if isinstance(r["overrides"], str) else "", "knobs": r["knobs"],
                         "metric": label, "ncu_metric": m, "measured": meas, "predicted": pred,
                         "rel_diff": diff, "allowed": allowed(m, divides), "tiles_divide": divides,
                         "within": diff is not None and abs(diff) <= allowed(m, divides),
                         "device": r["device"], "date": r["date"]})
    return pd.DataFrame(rows)
