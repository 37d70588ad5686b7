"""Write the H200 measurements of one device run into data/: the benchmark table with each row's `best`
(the run whose knobs equal the shipped preset's), the Nsight Compute counters, and the sweep summary.

    python -m bench.finalize RUN_DIR   (a device run's $OUT, fetched here)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from kernels.knobs import KnobError, parse_knobs, preset

from . import ncu_data

DATA = Path(__file__).resolve().parent.parent / "data"
COMMAND = "bash bench/device_run3.sh  (bench.h200 table --candidates; bench.picks; ncu ... bench.h200 ncu-launch; " \
          "bench.h200 sweep --picks)"


def best_run(row: dict) -> str | None:
    """The run of a table row whose knobs are today's `best` preset (the run named "best" where it is). A
    recorded knob text is parsed into today's knob class, so a knob added since takes its default."""
    want = preset(row["op"], "cuda", "best", row["shape"])

    def same(text) -> bool:
        try:
            return isinstance(text, str) and parse_knobs(row["op"], "cuda", text) == want
        except KnobError:
            return False
    names = [n for n, r in row["runs"].items() if "median_ms" in r and same(r.get("knobs"))]
    return "best" if "best" in names else next(iter(names), None)


def bench_table(run: Path) -> dict:
    t = json.load(open(run / "table.json"))
    for row in t["rows"]:
        row["best_run"] = best_run(row)
    t["command"] = COMMAND
    t["started"] = (run / "started").read_text().strip()
    t["reference_timing"] = "torch call captured in a CUDA graph, replayed back to back; kernels by TVM's " \
                            "time_evaluator; medians of 7 repeats of at least 10 ms each, after warm-up"
    return t


def remerge(how: str, *tables: str) -> None:
    """Fold re-measured rows (bench.merge) into data/h200_bench.json, each row keeping its own date; `how` (the
    device run and what it re-measured) is appended to the table's command.
        python -m bench.finalize --remerge "HOW" TABLE.json [...]"""
    from .merge import merge
    old = json.load(open(DATA / "h200_bench.json"))
    t = merge(old, *(json.load(open(p)) for p in tables))
    for row in t["rows"]:
        row["best_run"] = best_run(row)
    t["command"] = f"{old['command']}, {how}"
    json.dump(t, open(DATA / "h200_bench.json", "w"), indent=1)


def sweeps(*jsonl: str) -> None:
    """Union of several sweep logs (one job = op, shape, preset) into data/h200_sweep.json."""
    from .shapes import course_shapes
    seen = {}
    for p in jsonl:
        for line in open(p):
            r = json.loads(line)
            seen[(r["op"], json.dumps(r["shape"], sort_keys=True), r["preset"])] = r
    done = list(seen.values())
    by = {}
    for op in ("gemm", "conv1d", "dwconv2d", "dwsep_conv2d"):
        rs = [r for r in done if r["op"] == op]
        by[op] = {"passed": sum(r["ok"] for r in rs), "run": len(rs), "planned": 4 * len(course_shapes(op))}
    s = json.load(open(DATA / "h200_sweep.json"))
    s.update(done=len(done), passed=sum(r["ok"] for r in done), by_op=by,
             failed=[r for r in done if not r["ok"]][:50],
             jobs=sum(v["planned"] for v in by.values()),
             command=s["command"] + "; more depthwise jobs: bench.h200 sweep --seed 1 --ops dwconv2d,dwsep_conv2d",
             runs=[Path(p).parent.name for p in jsonl])
    json.dump(s, open(DATA / "h200_sweep.json", "w"), indent=1)


def main(run_dir: str) -> None:
    run = Path(run_dir)
    t = bench_table(run)
    json.dump(t, open(DATA / "h200_bench.json", "w"), indent=1)
    json.dump(json.load(open(run / "picks.json")), open(DATA / "h200_picks.json", "w"), indent=1)
    s = json.load(open(run / "sweep_summary.json"))
    s.update(device=t["device"], date=t["started"], command=COMMAND + " (sweep part: bench.h200 sweep)")
    json.dump(s, open(DATA / "h200_sweep.json", "w"), indent=1)
    ncu_data.main(str(run / "ncu.csv"), str(run / "ncu_list_launched.json"), str(DATA / "ncu_h200.csv"),
                  t["device"], t["started"], t["versions"].split(",")[0].replace("tvm ", ""),
                  "bash bench/device_run3.sh (ncu --clock-control none --metrics ... python3 -m bench.h200 ncu-launch)")
    for row in t["rows"]:
        print(row["op"], row["shape"], "best =", row["best_run"])


if __name__ == "__main__":
    if sys.argv[1] == "--remerge":
        remerge(*sys.argv[2:])
    elif sys.argv[1] == "--sweeps":
        sweeps(*sys.argv[2:])
    else:
        main(sys.argv[1])
