"""Choose `best` from a benchmark table: per operator, the fastest run that verified at the operator's
largest row (and, for conv1d, the fastest split-reduction run at the few-outputs row)."""
from __future__ import annotations

import json
import sys

from kernels.knobs import PRESETS, few_outputs, fitted, preset

from .shapes import BENCH_ROWS
from .tuning import CANDIDATES


def _spec(op: str, name: str) -> str | None:
    if name in CANDIDATES.get(op, {}):
        return CANDIDATES[op][name]
    if name in ("seed", "best"):
        return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                        for k, v in PRESETS[(op, "cuda")][name].items())
    return None


def pick(table: dict) -> dict:
    out = {}
    for row in table["rows"]:
        op = row["op"]
        big = max((s for o, s, _ in BENCH_ROWS if o == op), key=lambda s: sum(s.values()))
        few = op == "conv1d" and row["shape"]["M"] + row["shape"]["N"] - 1 < 16384
        if row["shape"] != big and not few:
            continue
        runs = [(r["median_ms"], n) for n, r in row["runs"].items()
                if r.get("ok") and "median_ms" in r and _spec(op, n) is not None
                and (not few or "k_threads=" in (_spec(op, n) or ""))]
        if runs:
            ms, name = min(runs)
            out[op + ("/few" if few else "")] = {"name": name, "knobs": _spec(op, name), "median_ms": ms}
    return out


def best_knobs(op: str, shape: dict, picks: dict):
    """The `best` knobs for a shape under the picks (falling back to the shipped preset)."""
    if few_outputs(op, "cuda", shape):
        if op + "/few" in picks:
            return fitted(op, "cuda", picks[op + "/few"]["knobs"], shape)
        return preset(op, "cuda", "best", shape)
    if op in picks:
        return fitted(op, "cuda", picks[op]["knobs"], shape)
    return preset(op, "cuda", "best", shape)


if __name__ == "__main__":
    p = pick(json.load(open(sys.argv[1])))
    json.dump(p, open(sys.argv[2], "w"), indent=1)
    for k, v in p.items():
        print(f"best {k}: {v['name']} {v['median_ms']:.4f} ms  ({v['knobs']})")
