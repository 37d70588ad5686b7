"""Which version of a pinned dependency works: each version installed alone into a fresh virtual environment
beside this machine's packages (--system-site-packages, pip install --no-deps), a check run in it, the outcome
recorded; one JSON document on stdout (progress on stderr).

    python -m bench.deps try apache-tvm-ffi==0.1.15.post2 [apache-tvm-ffi==0.1.14.post1 ..] [--cost-model random]
    python -m bench.deps metaschedule [--cost-model random]      the check, here: MetaSchedule's tune_tir

The check: TVM's MetaSchedule (tvm.s_tir.meta_schedule.tune_tir) on a 64^3 GEMM from kernels.schedules.unscheduled,
target llvm skylake-avx512 with 2 cores, max_trials_global=8, num_trials_per_iter=4 (its default cost model
needs xgboost; --cost-model random needs nothing). bench/plans/metaschedule_ffi.toml names these commands
(data/metaschedule_ffi.json).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def metaschedule(cost_model: str | None, trials: int = 8) -> dict:
    """tune_tir on a 64^3 GEMM; what it returned and how long it took (an exception propagates: the outcome)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from kernels.schedules import unscheduled
    mod = unscheduled("gemm", {"M": 64, "N": 64, "K": 64}).mod
    target = tvm.target.Target({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as wd:
        db = ms.tune_tir(mod=mod, target=target, work_dir=wd, max_trials_global=trials,
                         num_trials_per_iter=min(trials, 4), **({"cost_model": cost_model} if cost_model else {}))
    return {"returned": type(db).__name__, "seconds": round(time.perf_counter() - t0, 1),
            "cost_model": cost_model or "default"}


def try_versions(pins: list[str], cost_model: str | None, timeout_s: float) -> dict:
    """Each PACKAGE==VERSION alone in a fresh venv, the check run there; its outcome (exit status, its last lines)."""
    results = []
    for pin in pins:
        package, _, version = pin.partition("==")
        with tempfile.TemporaryDirectory(prefix="deps-") as d:
            venv = Path(d) / "V"
            py = venv / "bin" / "python"
            steps = [[sys.executable, "-m", "venv", str(venv), "--system-site-packages"],
                     [str(py), "-m", "pip", "install", "-q", "--no-deps", pin],
                     [str(py), "-m", "bench.deps", "metaschedule", *(["--cost-model", cost_model] if cost_model else [])]]
            out = {package: version, "cost_model": cost_model or "default"}
            for cmd in steps:
                log("$", " ".join(cmd))
                try:
                    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s,
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
                    rc, text = p.returncode, (p.stdout + p.stderr).strip()
                except subprocess.TimeoutExpired:
                    rc, text = "timeout", f"stopped after {timeout_s} s"
                out.update(rc=rc, outcome="\n".join(text.splitlines()[-8:]))
                if rc != 0:
                    out["failed_at"] = " ".join(cmd[1:3])
                    break
            results.append(out)
            log(pin, "->", out["rc"], out["outcome"].splitlines()[-1:] if out["outcome"] else "")
    return {"device": f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)",
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "python": platform.python_version(),
            "results": results}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.deps", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("try", help="each PACKAGE==VERSION alone in a fresh venv, the check run in it")
    t.add_argument("pins", nargs="+", metavar="PACKAGE==VERSION")
    t.add_argument("--cost-model", help="MetaSchedule's cost model (default: its own, xgb)")
    t.add_argument("--timeout-s", type=float, default=600)
    m = sub.add_parser("metaschedule", help="the check, in this environment")
    m.add_argument("--cost-model")
    m.add_argument("--trials", type=int, default=8)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.cmd == "try":
        bad = [x for x in a.pins if "==" not in x]
        if bad:
            raise SystemExit(f"give each version as PACKAGE==VERSION, not {', '.join(bad)}")
        print(json.dumps(try_versions(a.pins, a.cost_model, a.timeout_s), indent=1))
    else:
        print(json.dumps(metaschedule(a.cost_model, a.trials), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
