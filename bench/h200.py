"""The GPU script: correctness sweep, benchmark table and Nsight Compute launches, in one process each.

    python3 -m bench.h200 sweep --out DIR [--budget-s S] [--workers N]
    python3 -m bench.h200 table --out DIR [--candidates]
    python3 -m bench.h200 ncu-launch --list FILE        (run under ncu; launches each kernel once)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
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
    from .picks import best_knobs
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
          ops: tuple[str, ...] = OPS) -> None:
    jobs = []
    for op in ("gemm", "conv1d"):
        if op in ops:
            jobs += [(op, s, p, picks) for s in course_shapes(op) for p in PRESETS]
    rest = [(op, s, p, picks) for op in ("dwconv2d", "dwsep_conv2d") if op in ops
            for s in course_shapes(op) for p in PRESETS]
    random.Random(seed).shuffle(rest)
    jobs += rest
    t0 = time.time()
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
    summary = {"jobs": len(jobs), "done": len(done), "passed": sum(r["ok"] for r in done),
               "failed": [r for r in done if not r["ok"]][:50], "seconds": time.time() - t0}
    by = {}
    for r in done:
        key = r["op"]
        by.setdefault(key, [0, 0])
        by[key][0] += r["ok"]
        by[key][1] += 1
    summary["by_op"] = {k: {"passed": a, "run": b, "planned": sum(j[0] == k for j in jobs)} for k, (a, b) in by.items()}
    json.dump(summary, open(os.path.join(out, "sweep_summary.json"), "w"), indent=1)
    print(f"sweep: {summary['passed']}/{summary['done']} passed of {summary['jobs']} planned, "
          f"{summary['seconds']:.0f}s; by op {summary['by_op']}")
    for r in summary["failed"][:10]:
        print("  FAILED", r)


# ------------------------------------------------------------------ benchmark table
def candidates(op: str, shape: dict) -> dict[str, str]:
    """Knob sets tried beside the presets (name -> --knobs text), read off the schedules' access patterns."""
    from .tuning import CANDIDATES
    return {n: k for n, k in CANDIDATES.get(op, {}).items()}


def _time_knobs(op, shape, knobs, repeat):
    from kernels import build
    r = build.run(op, shape, knobs, "cuda", repeat=repeat, with_reference=False)
    return {"median_ms": r.median_ms, "spread_ms": r.spread_ms, "rel_err": r.rel_err, "ok": r.ok,
            "gflops": r.gflops, "gbps": r.gbps, "knobs": r.knobs, "compile_s": r.compile_s}


def table(out: str, with_candidates: bool, rows: list[int] | None, only: list[str] | None = None,
          file: str = "table.json") -> None:
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
            med, spread, rel = build.time_module(op, shape, mod, "cuda", 7)
            row["runs"]["dlight"] = {"median_ms": med, "spread_ms": spread, "rel_err": rel, "ok": rel < 1e-4}
        except Exception as e:          # noqa: BLE001
            row["runs"]["dlight"] = {"error": f"{type(e).__name__}: {str(e)[-300:]}"}
        if with_candidates:
            for name, text in candidates(op, shape).items():
                if only and name not in only:
                    continue
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
        print(f"{op} {shape} ref {refms:.4f} ms | {line}", flush=True)
        json.dump(res, open(os.path.join(out, file), "w"), indent=1)


# ------------------------------------------------------------------ Nsight Compute
def ncu_launch(list_file: str) -> None:
    """Compile every listed kernel, then launch each once, in order (ncu reads the counters)."""
    import tvm
    from kernels import build
    from kernels.knobs import resolve
    from kernels.ops import OPS as OPDEFS
    items = json.load(open(list_file))
    mods, launched = [], []
    for it in items:
        try:
            k = resolve(it["op"], "cuda", it["shape"], it.get("preset"), it.get("knobs"))
            _, mod, _ = build.compiled(it["op"], tuple(it["shape"].items()), k, "cuda")
        except Exception as e:      # noqa: BLE001 - a kernel that does not build is left out, and said so
            print(f"not launched: {it}: {type(e).__name__}: {str(e)[-200:]}")
            continue
        launched.append(it)
        o = OPDEFS[it["op"]]
        dev = tvm.cuda(0)
        xs = o.random_inputs(it["shape"], np.random.default_rng(0))
        args = [tvm.runtime.tensor(x, dev) for x in xs]
        args.append(tvm.runtime.tensor(np.zeros(o.output_shape(it["shape"]), "float32"), dev))
        mods.append((mod, args))
    for mod, args in mods:
        mod["main"](*args)
        tvm.cuda(0).sync()
    json.dump(launched, open(list_file.replace(".json", "_launched.json"), "w"), indent=1)
    print(f"launched {len(mods)} kernels")


def main() -> None:
    p = argparse.ArgumentParser(prog="python3 -m bench.h200")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--out", required=True)
    s.add_argument("--budget-s", type=float, default=240)
    s.add_argument("--workers", type=int, default=12)
    s.add_argument("--picks", help="bench/picks.py output: the `best` knobs to verify")
    s.add_argument("--seed", type=int, default=0, help="order of the dwconv2d/dwsep_conv2d jobs")
    s.add_argument("--ops", default=",".join(OPS))
    t = sub.add_parser("table")
    t.add_argument("--out", required=True)
    t.add_argument("--candidates", action="store_true")
    t.add_argument("--only", help="comma-separated candidate names (default: all of the operator's)")
    t.add_argument("--name", default="table.json", help="file name under --out")
    t.add_argument("--rows", help="comma-separated row numbers of BENCH_ROWS (default: all)")
    n = sub.add_parser("ncu-launch")
    n.add_argument("--list", required=True)
    a = p.parse_args()
    if a.cmd == "sweep":
        sweep(a.out, a.budget_s, a.workers, json.load(open(a.picks)) if a.picks else None, a.seed,
              tuple(a.ops.split(",")))
    elif a.cmd == "table":
        table(a.out, a.candidates, [int(x) for x in a.rows.split(",")] if a.rows else None,
              a.only.split(",") if a.only else None, a.name)
    else:
        ncu_launch(a.list)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        raise
