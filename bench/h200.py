"""On the GPU: the correctness sweep, the benchmark table, `best` picked from a table, tables merged, and the
GPU's measured ceilings, each in one process; each prints one JSON document on stdout (progress on stderr).

    python3 -m bench.h200 sweep --out DIR [--budget-s S] [--workers N] [--ops gemm,..] [--picks FILE] [--rows]
    python3 -m bench.h200 table --out DIR [--rows 0,1] [--candidates [--only NAME,..]] [--variant OP:NAME=KNOBS]
    python3 -m bench.h200 pick TABLE.json [--out FILE]      per operator, the fastest verified run of the table
    python -m bench.h200 merge FILE...                      tables (or a plan's data file of them) merged in order
    python3 -m bench.h200 ceilings                          copy bandwidth and cuBLAS fp32 rate of the GPU

`sweep` verifies every course shape x preset (bench/shapes.py) against float64 on fresh inputs until its budget
is spent; `table` times the benchmark rows (BENCH_ROWS): the reference library, the four presets, TVM's dlight,
and named knob sets: bench.variants.CANDIDATES (--candidates, --only) or given inline (--variant). The plans under
bench/plans name these commands (data/h200_bench.json, h200_picks, h200_sweep, h200_sweep_gemm, h200_tuning_1,
h200_ceilings).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import time
import traceback

import numpy as np

from .shapes import BENCH_ROWS, course_shapes

OPS = ("gemm", "conv1d", "dwconv2d", "dwsep_conv2d")
PRESETS = ("baseline", "naive", "seed", "best")


# ------------------------------------------------------------------ correctness sweep
def _verify_job(job):
    from kernels import build
    from kernels.knobs import knobs_text, preset
    op, shape, name, picks = job
    t0 = time.time()
    try:
        k = best_knobs(op, shape, picks) if name == "best" and picks else preset(op, "cuda", name, shape)
        rel, _, _ = build.verify(op, shape, k, "cuda")
        return {"op": op, "shape": shape, "preset": name, "knobs": knobs_text(k), "rel_err": rel,
                "ok": bool(rel < build.TOLERANCE), "secs": time.time() - t0}
    except Exception as e:      # noqa: BLE001 - every failure is data here
        return {"op": op, "shape": shape, "preset": name, "rel_err": None, "ok": False, "secs": time.time() - t0,
                "error": f"{type(e).__name__}: {str(e)[-400:]}"}


def sweep(out: str, budget_s: float, workers: int, picks: dict | None, seed: int = 0,
          ops: tuple[str, ...] = OPS, with_rows: bool = False) -> dict:
    """Every course shape x preset of the operators, verified in `workers` processes until `budget_s` is spent
    (GEMM and conv1d first, then the depthwise jobs in an order drawn from `seed`); OUT/sweep.jsonl has a line
    per job, OUT/sweep_summary.json the summary, which is returned (with every job under "rows" if asked)."""
    from kernels import build
    jobs = []
    for op in ("gemm", "conv1d"):
        if op in ops:
            jobs += [(op, s, p, picks) for s in course_shapes(op) for p in PRESETS]
    rest = [(op, s, p, picks) for op in ("dwconv2d", "dwsep_conv2d") if op in ops
            for s in course_shapes(op) for p in PRESETS]
    random.Random(seed).shuffle(rest)
    jobs += rest
    t0 = time.time()
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    done = []
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, maxtasksperchild=64) as pool, open(os.path.join(out, "sweep.jsonl"), "w") as f:
        pending = [pool.apply_async(_verify_job, (j,)) for j in jobs]
        for r in pending:
            left = budget_s - (time.time() - t0)
            if left <= 0:
                break
            try:
                res = r.get(timeout=left)
            except mp.TimeoutError:
                break
            done.append(res)
            f.write(json.dumps(res) + "\n")
        pool.terminate()
    summary = {"device": build.device_name("cuda"), "date": date, "jobs": len(jobs), "done": len(done),
               "passed": sum(r["ok"] for r in done), "failed": [r for r in done if not r["ok"]][:50],
               "seconds": time.time() - t0}
    by = {}
    for r in done:
        key = r["op"]
        by.setdefault(key, [0, 0])
        by[key][0] += r["ok"]
        by[key][1] += 1
    summary["by_op"] = {k: {"passed": a, "run": b, "planned": sum(j[0] == k for j in jobs)} for k, (a, b) in by.items()}
    json.dump(summary, open(os.path.join(out, "sweep_summary.json"), "w"), indent=1)
    log(f"sweep: {summary['passed']}/{summary['done']} passed of {summary['jobs']} planned, "
        f"{summary['seconds']:.0f}s; by op {summary['by_op']}")
    for r in summary["failed"][:10]:
        log("  FAILED", r)
    return {**summary, "rows": done} if with_rows else summary


# ------------------------------------------------------------------ benchmark table
def _time_knobs(op, shape, knobs, repeat):
    from kernels import build
    r = build.run(op, shape, knobs, "cuda", repeat=repeat, with_reference=False)
    return {"median_ms": r.median_ms, "spread_ms": r.spread_ms, "rel_err": r.rel_err, "ok": r.ok,
            "gflops": r.gflops, "gbps": r.gbps, "knobs": r.knobs, "compile_s": r.compile_s, "timer": r.timer}


def named_variants(with_candidates: bool, only: list[str] | None, inline: list[str]) -> dict[str, dict[str, str]]:
    """op -> name -> knob text: the catalogue's (bench.variants.CANDIDATES, those in `only`) and OP:NAME=KNOBS."""
    from .variants import CANDIDATES
    out: dict[str, dict[str, str]] = {}
    if with_candidates:
        for op, c in CANDIDATES.items():
            out[op] = {n: k for n, k in c.items() if not only or n in only}
        missing = set(only or ()) - {n for c in CANDIDATES.values() for n in c}
        if missing:
            raise ValueError(f"--only names {sorted(missing)}, which bench.variants.CANDIDATES does not hold")
    for v in inline:
        op, colon, rest = v.partition(":")
        name, eq, knobs = rest.partition("=")
        if not (colon and eq and name) or op not in OPS:
            raise ValueError(f"--variant {v!r}: write OP:NAME=KNOBS, OP one of {', '.join(OPS)}")
        out.setdefault(op, {})[name] = knobs
    return out


def table(out: str, variants: dict[str, dict[str, str]], rows: list[int] | None, file: str = "table.json") -> dict:
    """The benchmark rows (BENCH_ROWS, or those numbered): the reference library, the four presets, dlight, and
    each named variant of the row's operator, verified and timed in this process; OUT/FILE is rewritten after
    every row, so a run cut short keeps the rows it did."""
    from kernels import build
    from kernels.knobs import KnobError, preset, resolve
    from kernels.ops import OPS as OPDEFS
    res = {"device": build.device_name("cuda"), "versions": build.versions(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": []}
    for i, (op, shape, goal) in enumerate(BENCH_ROWS):
        if rows is not None and i not in rows:
            continue
        row = {"op": op, "shape": shape, "goal": goal, "runs": {}}
        o = OPDEFS[op]
        xs = o.random_inputs(shape, np.random.default_rng(0))
        ref = build.reference_timer(op, "cuda", xs)
        ts = build._time_host(ref[1], 7, ref[2])
        row["reference"] = {"name": ref[0], "median_ms": float(np.median(ts)),
                            "spread_ms": float(np.percentile(ts, 75) - np.percentile(ts, 25))}
        for p in PRESETS:
            try:
                k = preset(op, "cuda", p, shape)
                slow = p in ("baseline", "naive") and o.flops(shape) > 4e9
                row["runs"][p] = _time_knobs(op, shape, k, 1 if slow else 7)
            except Exception as e:      # noqa: BLE001
                row["runs"][p] = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        try:
            mod = build.dlight_module(op, shape)
            med, spread, rel, how = build.time_module(op, shape, mod, "cuda", 7)
            row["runs"]["dlight"] = {"median_ms": med, "spread_ms": spread, "rel_err": rel, "ok": rel < 1e-4,
                                     "timer": how}
        except Exception as e:          # noqa: BLE001
            row["runs"]["dlight"] = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        for name, text in variants.get(op, {}).items():
            try:
                k = resolve(op, "cuda", shape, None, text)
            except KnobError as e:
                row["runs"][name] = {"error": str(e)}
                continue
            try:
                row["runs"][name] = _time_knobs(op, shape, k, 7)
            except Exception as e:  # noqa: BLE001
                row["runs"][name] = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        res["rows"].append(row)
        refms = row["reference"]["median_ms"]
        line = " ".join(f"{n}={r['median_ms']:.4f}({refms / r['median_ms']:.2f}x)" + ("" if r.get("ok") else "!")
                        for n, r in row["runs"].items() if "median_ms" in r)
        log(f"{op} {shape} ref {refms:.4f} ms | {line}")
        json.dump(res, open(os.path.join(out, file), "w"), indent=1)
    return res


# ------------------------------------------------------------------ best, picked from a table
def _spec(op: str, name: str) -> str | None:
    """The knob text of a table's run: a catalogue entry, or the seed/best preset's own knobs."""
    from kernels.knobs import PRESETS as KP
    from .variants import CANDIDATES
    if name in CANDIDATES.get(op, {}):
        return CANDIDATES[op][name]
    if name in ("seed", "best"):
        return ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                        for k, v in KP[(op, "cuda")][name].items())
    return None


def pick(tab: dict) -> dict:
    """Per operator, the fastest run that verified at the operator's largest row (and, for conv1d, the fastest
    split-reduction run at the few-outputs row, as "conv1d/few")."""
    out = {}
    for row in tab["rows"]:
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
    from kernels.knobs import few_outputs, fitted, preset
    if few_outputs(op, "cuda", shape):
        if op + "/few" in picks:
            return fitted(op, "cuda", picks[op + "/few"]["knobs"], shape)
        return preset(op, "cuda", "best", shape)
    if op in picks:
        return fitted(op, "cuda", picks[op]["knobs"], shape)
    return preset(op, "cuda", "best", shape)


# ------------------------------------------------------------------ tables merged
REFERENCE_TIMING = ("torch call and kernel each captured in a CUDA graph (as many calls back to back as fill "
                    "0.2 ms in one graph where a call is shorter), replayed back to back; medians of 7 repeats of "
                    "at least 10 ms each, after warm-up")


def tables_in(doc: dict) -> list[dict]:
    """The benchmark tables of a document: itself, or the outputs of a plan's steps (bench/run.py), in order."""
    if isinstance(doc.get("rows"), list):
        return [doc]
    return [s["output"] for s in doc.get("steps", []) if isinstance(s.get("output"), dict)
            and isinstance(s["output"].get("rows"), list)]


def best_run(row: dict) -> str | None:
    """The run of a table row whose knobs are today's `best` preset (the run named "best" where it is). A
    recorded knob text is parsed into today's knob class, so a knob added since takes its default."""
    from kernels.knobs import KnobError, parse_knobs, preset
    want = preset(row["op"], "cuda", "best", row["shape"])

    def same(text) -> bool:
        try:
            return isinstance(text, str) and parse_knobs(row["op"], "cuda", text) == want
        except KnobError:
            return False
    names = [n for n, r in row["runs"].items() if "median_ms" in r and same(r.get("knobs"))]
    return "best" if "best" in names else next(iter(names), None)


def merge(tables: list[dict]) -> dict:
    """Tables in the order they were measured: a re-measured row takes the new reference and runs, and keeps the
    runs it did not repeat, each run with the date it was measured ('started'); each row's `best_run` marked."""
    base = tables[0]
    out = {k: v for k, v in base.items() if k != "rows"}
    first = base.get("started", base.get("date"))
    rows = [dict(r, started=r.get("started", first),
                 runs={n: dict(x, started=x.get("started", r.get("started", first))) for n, x in r["runs"].items()})
            for r in base["rows"]]
    for t in tables[1:]:
        for r in t["rows"]:
            fresh = {n: dict(x, started=t["date"]) for n, x in r["runs"].items()}
            old = [x for x in rows if (x["op"], x["shape"]) == (r["op"], r["shape"])]
            if not old:
                rows.append(dict(r, started=t["date"], runs=fresh))
            rows = [x if (x["op"], x["shape"]) != (r["op"], r["shape"]) else
                    dict(r, started=t["date"], runs={**x["runs"], **fresh}) for x in rows]
        out.update(device=t.get("device", out.get("device")), versions=t.get("versions", out.get("versions")),
                   date=t.get("date", out.get("date")))
    for row in rows:
        row["best_run"] = best_run(row)
    out.update(rows=rows, started=first, reference_timing=REFERENCE_TIMING)
    return out


# ------------------------------------------------------------------ the GPU's ceilings
def ceilings() -> dict:
    """Measured roofline ceilings: device-to-device copy bandwidth and the cuBLAS fp32 rate (TF32 off)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False

    def ms(fn, n=20):
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        out = []
        for _ in range(n):
            s.record()
            fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e))
        return sorted(out)[len(out) // 2]
    x = torch.randn(1 << 30, device="cuda")             # 4 GiB, far above the 60 MB L2
    y = torch.empty_like(x)
    copy_ms = ms(lambda: y.copy_(x))
    a = torch.randn(8192, 8192, device="cuda")
    b = torch.randn(8192, 8192, device="cuda")
    mm_ms = ms(lambda: a @ b, 10)
    return {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "copy_gbps": 2 * x.numel() * 4 / copy_ms / 1e6, "sgemm_gflops": 2 * 8192 ** 3 / mm_ms / 1e6,
            "how": "copy: median of 20 device-to-device copies of 4 GiB, bytes read + written; "
                   "sgemm: median of 10 torch.matmul 8192^3 fp32 with TF32 off (cuBLAS)"}


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m bench.h200", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="every course shape x preset verified against float64")
    s.add_argument("--out", required=True)
    s.add_argument("--budget-s", type=float, default=240)
    s.add_argument("--workers", type=int, default=12)
    s.add_argument("--picks", help="picks (`pick`'s output, e.g. data/h200_picks.json): the `best` knobs to verify")
    s.add_argument("--seed", type=int, default=0, help="order of the dwconv2d/dwsep_conv2d jobs")
    s.add_argument("--ops", default=",".join(OPS))
    s.add_argument("--rows", action="store_true", help="print every job's row with the summary")
    t = sub.add_parser("table", help="the benchmark rows: reference, presets, dlight and named knob sets")
    t.add_argument("--out", required=True)
    t.add_argument("--candidates", action="store_true", help="time bench.variants.CANDIDATES too")
    t.add_argument("--only", help="comma-separated catalogue names (default: all of the operator's)")
    t.add_argument("--variant", action="append", default=[], metavar="OP:NAME=KNOBS", help="a knob set given inline")
    t.add_argument("--name", default="table.json", help="file name under --out")
    t.add_argument("--rows", help="comma-separated row numbers of BENCH_ROWS (default: all)")
    k = sub.add_parser("pick", help="per operator, the fastest verified run of a table")
    k.add_argument("table")
    k.add_argument("--out", help="also write the picks here")
    m = sub.add_parser("merge", help="tables merged in the order given (a plan's data file: its steps' tables)")
    m.add_argument("files", nargs="+")
    sub.add_parser("ceilings", help="copy bandwidth and cuBLAS fp32 rate of this GPU")
    return p


def main(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    if a.cmd == "sweep":
        doc = sweep(a.out, a.budget_s, a.workers, json.load(open(a.picks)) if a.picks else None, a.seed,
                    tuple(a.ops.split(",")), a.rows)
    elif a.cmd == "table":
        doc = table(a.out, named_variants(a.candidates, a.only.split(",") if a.only else None, a.variant),
                    [int(x) for x in a.rows.split(",")] if a.rows else None, a.name)
    elif a.cmd == "pick":
        doc = pick(json.load(open(a.table)))
        for op, v in doc.items():
            log(f"best {op}: {v['name']} {v['median_ms']:.4f} ms  ({v['knobs']})")
        if a.out:
            json.dump(doc, open(a.out, "w"), indent=1)
    elif a.cmd == "merge":
        doc = merge([t for f in a.files for t in tables_in(json.load(open(f)))])
    else:
        doc = ceilings()
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        raise
