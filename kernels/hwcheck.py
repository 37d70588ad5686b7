"""The machine's view against the hardware: Nsight Compute counters recorded on the H200 next to the counts of
the same kernels' SASS, emulated here (kernels/sass).

Two sets of kernels:
- held-out batches (data/heldout/batch-*.json): random kernels drawn at run time, predicted before they were
  profiled, each batch judged once (bench/heldout.py). Their figure is the one to trust.
- the regression set (data/ncu_h200.csv): every kernel profiled before, with the emulator's counts stored in
  data/heldout/regression.json (written by `python -m bench.heldout regress`, checked by the tests).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "ncu_h200.csv"
HELDOUT = ROOT / "data" / "heldout"
PREDICTED = HELDOUT / "regression.json"
METRICS = {
    "smsp__inst_executed_op_global_ld.sum": "global load instr.",
    "smsp__inst_executed_op_global_st.sum": "global store instr.",
    "smsp__inst_executed_op_shared_ld.sum": "shared load instr.",
    "smsp__inst_executed_op_shared_st.sum": "shared store instr.",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors",
    "smsp__inst_executed_op_ldgsts.sum": "async copy instr. (LDGSTS)",
    "smsp__inst_executed_op_local_ld.sum": "local load instr.",
    "smsp__inst_executed_op_local_st.sum": "local store instr.",
}
# The agreement promised: every count exact, shared-memory instructions within 1%.
WITHIN_1PCT = ("smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum")
PROMISE = ("global loads and stores, global load sectors, LDGSTS and local loads and stores exact; shared loads "
           "and stores within 1%")


def allowed(metric: str) -> float:
    return 0.01 if metric in WITHIN_1PCT else 0.0


def agrees(metric: str, predicted: int | None, measured: int) -> bool:
    return predicted is not None and abs(predicted - measured) <= allowed(metric) * max(measured, 1)


def recorded(path: Path = DATA) -> pd.DataFrame:
    return pd.read_csv(path)


def key(op: str, shape: str | dict, knobs: str) -> str:
    """One recorded kernel: its operator, shape and the knob text it was measured with."""
    return json.dumps([op, json.loads(shape) if isinstance(shape, str) else shape, knobs])


def predict_all(path: Path = DATA, progress=None) -> dict:
    """The emulator's counts for every recorded kernel, by key (slow: each kernel is compiled and emulated)."""
    from . import sass
    from .knobs import resolve
    t = recorded(path)
    out = {}
    for i, r in enumerate(t.itertuples()):
        shape = json.loads(r.shape)
        k = resolve(r.op, "cuda", shape, None, r.knobs)
        m = sass.machine_counts(r.op, shape, k)
        out[key(r.op, shape, r.knobs)] = {"sass_hash": m.sass_hash, "predicted": m.ncu}
        if progress:
            progress((i + 1) / len(t))
    return out


def compare(path: Path = DATA, predicted: Path = PREDICTED) -> pd.DataFrame:
    """One row per (recorded kernel, metric): measured, predicted (stored), difference, allowed, within."""
    preds = json.load(open(predicted))["kernels"] if Path(predicted).exists() else {}
    rows = []
    for _, r in recorded(path).iterrows():
        p = preds.get(key(r["op"], r["shape"], r["knobs"]), {}).get("predicted", {})
        preset = r["preset"] if isinstance(r["preset"], str) else ""
        for m, label in METRICS.items():
            if m not in r or pd.isna(r[m]):
                continue                # a metric not recorded for this kernel (read before it was added)
            meas, pred = int(r[m]), p.get(m)
            rows.append({"op": r["op"], "shape": r["shape"], "preset": preset,
                         "overrides": r["overrides"] if isinstance(r["overrides"], str) else "", "knobs": r["knobs"],
                         "metric": label, "ncu_metric": m, "measured": meas, "predicted": pred,
                         "rel_diff": None if pred is None else (pred - meas) / max(meas, 1),
                         "allowed": allowed(m), "within": agrees(m, pred, meas),
                         "device": r["device"], "date": r["date"]})
    return pd.DataFrame(rows)


def _all_batches(folder: Path) -> list[dict]:
    return [json.load(open(p)) for p in sorted(Path(folder).glob("batch-*.json"))]


def batches(folder: Path = HELDOUT) -> list[dict]:
    """Every judged held-out batch, oldest first."""
    return sorted((b for b in _all_batches(folder) if b.get("measured")), key=lambda b: b["measured"]["date"])


def waiting(folder: Path = HELDOUT) -> list[dict]:
    """Held-out batches drawn and committed, predictions written, not yet profiled: seed, when drawn, kernels, and
    the command that drew them (what a batch drawn to judge one rule keeps fixed), oldest first."""
    return sorted(({"seed": b["seed"], "drawn": b["drawn"], "kernels": len(b["kernels"]), "command": b["command"]}
                   for b in _all_batches(folder) if not b.get("measured")), key=lambda w: w["drawn"])


def heldout(folder: Path = HELDOUT) -> pd.DataFrame:
    """One row per held-out kernel of every judged batch: its batch, operator, whether tiles divide its shape,
    and whether every counter agrees (an emulator that could not read the kernel counts as a miss). A kernel the
    driver could not launch has no counters: neither a hit nor a miss, it is not a row."""
    rows = []
    for b in batches(folder):
        for e in (e for e in b["kernels"] if "not_launched" not in e):
            rows.append({"seed": b["seed"], "drawn": b["drawn"], "measured_on": b["measured"]["date"],
                         "device": b["measured"]["device"], "id": e["id"], "op": e["op"],
                         "shape": json.dumps(e["shape"]), "knobs": e["knobs"], "preset": e.get("preset", ""),
                         "ragged": e["remainder"], "agrees": bool(e.get("agrees")), "error": e.get("error", ""),
                         **{f"measured {k}": v for k, v in e.get("measured", {}).items()},
                         **{f"predicted {k}": v for k, v in (e.get("predicted") or {}).items()}})
    return pd.DataFrame(rows)
