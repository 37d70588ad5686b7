"""Read `ncu --csv --print-units base` logs: per launch (parse, by_kernel), and as data/ncu_h200.csv's rows, one
per profiled kernel configuration (the counters of its launches summed; counter_rows, write_csv). bench/ncu.py
runs Nsight Compute and reads its logs with these; bench/heldout.py judges its batches with `parse`."""
from __future__ import annotations

import csv
import io
import json

from kernels.knobs import knobs_text, resolve
from kernels.traffic import lowered
from kernels._tirpy import children, thread_extent

METRICS = ("smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
           "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
           "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "smsp__inst_executed_op_ldgsts.sum",
           "gpu__time_duration.sum")


def kernels_launched(func) -> int:
    n = [0]

    def walk(s):
        te = thread_extent(s)
        if te and te[0].startswith("blockIdx"):
            n[0] += 1
            return
        for c in children(s):
            walk(c)
    walk(func.body)
    return n[0]


def rows(ncu_text: str) -> list[dict]:
    """The CSV rows of an `ncu --csv` log (one per kernel launch and metric), without ncu's own messages."""
    lines = [l for l in ncu_text.splitlines() if l.startswith('"')]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def parse(ncu_text: str) -> list[dict]:
    """Per launch (in order): {metric: value}."""
    launches: dict[str, dict] = {}
    for r in rows(ncu_text):
        v = r["Metric Value"].replace(",", "")
        if v != "n/a":                  # a metric this kernel has no unit for
            launches.setdefault(r["ID"], {})[r["Metric Name"]] = float(v)
    return [launches[k] for k in sorted(launches, key=int)]


def by_kernel(ncu_text: str) -> list[dict]:
    """Per profiled launch (in order): {"kernel": its name, metric: value (a number where ncu wrote one)}."""
    out: dict[int, dict] = {}
    for r in rows(ncu_text):
        v = r["Metric Value"].replace(",", "")
        try:
            v = float(v)
        except ValueError:
            pass
        out.setdefault(int(r["ID"]), {"kernel": r["Kernel Name"]})[r["Metric Name"]] = v
    return [out[k] for k in sorted(out)]


def counter_rows(ncu_text: str, items: list[dict], **fields) -> list[dict]:
    """One data/ncu_h200.csv row per listed kernel ({op, shape, preset, knobs}: the kernels launched, in order),
    the counters of its launches summed, with `fields` (device, date, tvm, ...) appended."""
    launches = parse(ncu_text)
    out, i = [], 0
    for it in items:
        k = resolve(it["op"], "cuda", it["shape"], it.get("preset"), it.get("knobs"))
        n = kernels_launched(lowered(it["op"], it["shape"], k, "cuda"))
        got = launches[i:i + n]
        i += n
        row = {"op": it["op"], "shape": json.dumps(it["shape"]), "preset": it.get("preset") or "",
               "overrides": it.get("knobs") or "", "knobs": knobs_text(k), "kernels": n}
        for m in METRICS:
            row[m] = int(sum(g.get(m, 0) for g in got)) if m != "gpu__time_duration.sum" else \
                sum(g.get(m, 0) for g in got)
        row.update(fields)
        out.append(row)
    if i != len(launches):
        raise ValueError(f"{len(launches)} launches profiled but {i} expected from the list")
    return out


def write_csv(rows_: list[dict], out_csv: str) -> None:
    """Rows as data/ncu_h200.csv writes them (csv.DictWriter's defaults, columns in the first row's order)."""
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows_[0]))
        w.writeheader()
        w.writerows(rows_)
