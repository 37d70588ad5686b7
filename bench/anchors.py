"""The tuner against its anchors, side by side in one process on one device: the vendor library (cuBLAS / cuDNN
through torch with TF32 off; numpy on the CPU), TVM's MetaSchedule with the same trial budget, TVM's dlight
(GPU), and ours (kernels.tune), each verified against float64 before its time counts.

    python -m bench.anchors side --op gemm --shape M=1024,N=1024,K=1024 --target cuda --trials 32 [--no-ms]
    python -m bench.anchors suite --target cuda --per-op 20 --trials 8 [--seed S] [--ops gemm,..] [--budget-s S]
                                  [--first N] [--count N]

`suite` draws shapes at run time from a seed (the clock's unless given; printed and recorded) over ranges typical
of CNN and transformer layers, never a benchmark row, and tunes each; one JSON line per shape on stdout.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
from types import SimpleNamespace

import numpy as np

OPS = ("gemm", "conv1d", "dwconv2d", "dwsep_conv2d")
MS_COST_MODELS = {"xgb": "xgboost", "mlp": "torch", "random": None}   # the first whose library loads is used


# ------------------------------------------------------------------ held-out shapes
def draw_shape(op: str, rng, target: str = "cuda") -> dict:
    """One shape over ranges typical of transformer (GEMM) and CNN (convolution) layers; half of the sizes are
    left as drawn (tiles rarely divide them), half rounded to a multiple of 64 (or a channel count). On the CPU
    (2 cores here) the ranges are a layer of a small batch: a tenth of the work or less."""
    def logu(lo, hi, round_to=1):
        v = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        return max(lo, v - v % round_to) if round_to > 1 and rng.random() < 0.5 else v
    cpu = target == "cpu"
    if op == "gemm":        # tokens x hidden x hidden
        hi = 1536 if cpu else 8192
        return {"M": logu(64, hi, 64), "N": logu(64, hi, 64), "K": logu(64, hi, 64)}
    if op == "conv1d":      # a signal and a filter
        return {"M": logu(1 << 10, 1 << (18 if cpu else 22), 1024), "N": logu(3, 513 if cpu else 2049)}
    chans = (16, 24, 32, 48, 64, 96, 128, 144, 192, 256, 384, 512)
    b = int(rng.choice((1, 2, 4) if cpu else (1, 2, 4, 8, 16, 32)))
    c = int(rng.choice(chans))
    hw = int(rng.choice((7, 14, 28, 56) if cpu else (7, 14, 28, 56, 112)))
    s = {"B": b, "C": c, "H": hw, "W": hw, "K": int(rng.choice((3, 3, 5, 7)))}
    while s["B"] > 1 and s["B"] * c * hw * hw > (1 << 21 if cpu else 1 << 25):    # activations' size capped
        s["B"] //= 2
    if op == "dwsep_conv2d":
        s["F"] = int(rng.choice(chans))
    return s


def suite_shapes(ops, per_op: int, seed: int, target: str = "cuda") -> list[tuple[str, dict]]:
    """A seeded draw of held-out shapes: never a benchmark row, nor a shape the shipped tuner data already holds
    (where `best` would resolve to an earlier run's winner; data/h100_suite_5.json's depthwise draw met one,
    4x16x28x28 K=5 from data/h100_suite.json, before this rule)."""
    from kernels.tune import shipped_rows
    from .shapes import BENCH_ROWS
    rng = np.random.default_rng(seed)
    bench = [(o, s) for o, s, _ in BENCH_ROWS] + [(r["op"], r["shape"]) for _, _, r in shipped_rows()]
    out = []
    for op in ops:
        got = []
        while len(got) < per_op:
            s = draw_shape(op, rng, target)
            if (op, s) not in bench and s not in got:
                got.append(s)
        out += [(op, s) for s in got]
    return out


# ------------------------------------------------------------------ the anchors
def vendor_ms(op: str, shape: dict, target: str, repeat: int = 7) -> tuple[str, float]:
    from kernels import build
    from kernels.ops import OPS as DEFS
    xs = DEFS[op].random_inputs(shape, np.random.default_rng(0))
    name, fn, sync = build.reference_timer(op, target, xs)
    return name, float(np.median(build._time_host(fn, repeat, sync)))


def blas() -> list[dict]:
    from threadpoolctl import threadpool_info
    return [{k: i.get(k) for k in ("internal_api", "architecture", "version", "num_threads")}
            for i in threadpool_info()] + [{"env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE",
                                                                                     "OPENBLAS_L2_SIZE")}}]


def timed(op: str, shape: dict, mod, target: str, repeat: int = 7) -> dict:
    from kernels import build
    ms, spread, rel, how = build.time_module(op, shape, mod, target, repeat)
    ok = rel < build.TOLERANCE
    return {"median_ms": ms if ok else None, "spread_ms": spread, "rel_err": rel, "ok": ok, "timer": how}


def ms_target(target: str):
    """MetaSchedule needs the GPU's limits in the target (its schedule rules read them)."""
    import tvm
    from kernels import lowering
    if target == "cpu":
        from kernels import build
        t = lowering.tvm_target("cpu")
        return tvm.target.Target({**dict(t.export()), "num-cores": build._physical_cores()})
    return tvm.target.Target({"kind": "cuda", "arch": lowering.CUDA_ARCH, "max_shared_memory_per_block": 49152,
                              "max_threads_per_block": 1024, "thread_warp_size": 32, "registers_per_block": 65536})


def metaschedule(op: str, shape: dict, target: str, trials: int, seed: int) -> dict:
    """TVM's MetaSchedule tune_tir on the unscheduled operator, `trials` measured candidates, its best compiled
    and timed here like every other kernel. The depthwise-separable operator on the GPU is tuned as two
    functions, the depthwise and the pointwise stage, half the trials each (see metaschedule_two_stages)."""
    from kernels.schedules import unscheduled
    if op == "dwsep_conv2d" and target == "cuda":
        return metaschedule_two_stages(shape, target, trials, seed)
    t0 = time.perf_counter()
    lib, found = ms_search(unscheduled(op, shape).mod, target, trials, seed)
    if lib is None:
        return {"error": f"MetaSchedule gave no kernel with any cost model here: {found['failed']}",
                "search_s": round(time.perf_counter() - t0, 1)}
    return {**timed(op, shape, lib, target), **found, "search_s": round(time.perf_counter() - t0, 1)}


def ms_search(mod, target: str, trials: int, seed: int):
    """(compiled module, {"cost_model", "failed", "trace"}) of MetaSchedule's best for one function, trying its
    cost models in order (MS_COST_MODELS) where one's library is missing or its search gives nothing; (None,
    {"failed": {model: why}}) where none gives a kernel."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    tgt = ms_target(target)
    errors = {}
    for cm in MS_COST_MODELS:
        try:
            if MS_COST_MODELS[cm]:
                __import__(MS_COST_MODELS[cm])
        except ImportError as e:    # a cost model whose library is missing here: the next one, and say so
            errors[cm] = str(e)[:120]
            continue
        with tempfile.TemporaryDirectory() as wd, _stdout_to_stderr():
            try:
                db = ms.tune_tir(mod=mod, target=tgt, work_dir=wd, max_trials_global=trials,
                                 num_trials_per_iter=min(trials, 16), cost_model=cm, seed=seed,
                                 builder=ms_builder(target))
                sch = ms.tir_integration.compile_tir(db, mod, tgt)
            except Exception as e:      # noqa: BLE001 - this cost model failed: the next one, and say so
                errors[cm] = f"{type(e).__name__}: {str(e).strip()[-200:]}"
                continue
            if sch is None:             # no candidate built and ran: the next cost model, with the log's words
                errors[cm] = "no valid schedule; log: " + _log_tail(wd)
                continue
            lib = tvm.compile(sch.mod, target=tgt).jit()
        return lib, {"cost_model": cm, "failed": errors, "trace": str(sch.trace)}
    return None, {"failed": errors}


def pointwise_mod(shape: dict):
    """The depthwise-separable operator's second stage alone: C[b, f, h, w] = sum_c D[b, c, h, w] P[f, c]."""
    import tvm
    from tvm import te
    from kernels.ops.dwsep_conv2d import pointwise
    D = te.placeholder([shape[k] for k in "BCHW"], name="D")
    P = te.placeholder((shape["F"], shape["C"], 1, 1), name="P")
    return tvm.IRModule({"main": te.create_prim_func([D, P, pointwise(D, P, shape)])})


class TwoStages:
    """Two compiled kernels, depthwise then pointwise, as one module taking the operator's arguments (X, W, P, C)
    through an intermediate D on the device; timed on the host, calls back to back, synchronized once a repeat
    (as the vendor library is), so each repeat includes both launches, as a call of our d_kernel module does."""

    def __init__(self, dw, pw, shape: dict, dev):
        import tvm
        self.dw, self.pw, self.dev = dw, pw, dev
        self.D = tvm.runtime.tensor(np.zeros([shape[k] for k in "BCHW"], "float32"), dev)

    def __getitem__(self, name: str):
        return self.run

    def run(self, X, W, P, C) -> None:
        self.dw["main"](X, W, self.D)
        self.pw["main"](self.D, P, C)

    def time_evaluator(self, name: str, dev, number: int = 1, repeat: int = 1, min_repeat_ms: int = 10):
        from kernels import build

        def timer(*args):
            return SimpleNamespace(results=[t / 1e3 for t in build._time_host(lambda: self.run(*args), repeat,
                                                                                   self.dev.sync)])
        return timer


def metaschedule_two_stages(shape: dict, target: str, trials: int, seed: int) -> dict:
    """MetaSchedule on the GPU for the depthwise-separable operator as a user of it would tune the layer: the
    depthwise stage (the dwconv2d operator at this shape) and the pointwise stage (pointwise_mod) as two
    functions, trials // 2 and the rest, joined through D in device memory and verified together. (Given the
    one function with both reductions, every candidate of its initial population failed its own GPU check at
    all three shapes of data/h100_suite_9.json.)"""
    from kernels import build
    from kernels.schedules import unscheduled
    t0 = time.perf_counter()
    dw_shape = {k: shape[k] for k in "BCHWK"}
    libs, found = [], {}
    for name, mod, n in (("depthwise", unscheduled("dwconv2d", dw_shape).mod, trials // 2),
                         ("pointwise", pointwise_mod(shape), trials - trials // 2)):
        lib, got = ms_search(mod, target, max(1, n), seed)
        found[name] = {**got, "trials": max(1, n)}
        if lib is None:
            return {"error": f"MetaSchedule gave no {name} kernel with any cost model here: {got['failed']}",
                    "stages": found, "search_s": round(time.perf_counter() - t0, 1)}
        libs.append(lib)
    mod = TwoStages(*libs, shape, build._tvm_dev(target))
    models = dict.fromkeys(f["cost_model"] for f in found.values())
    return {**timed("dwsep_conv2d", shape, mod, target), "cost_model": ",".join(models), "stages": found,
            "search_s": round(time.perf_counter() - t0, 1)}


def ms_builder(target: str):
    """MetaSchedule's builder, whose worker processes compile CUDA the way every kernel here is compiled (the
    pinned NVRTC, kernels.sass.toolchain): without it a worker falls back to TVM's own callback, which needs
    NVRTC through cuda-python or an nvcc, and on the GPU machines every candidate failed to build."""
    from tvm.s_tir import meta_schedule as ms
    if target != "cuda":
        return "local"
    from kernels.sass.toolchain import install_tvm_callback
    return ms.builder.LocalBuilder(initializer=install_tvm_callback)


def _log_tail(work_dir: str) -> str:
    """What MetaSchedule's task logs say went wrong: the first failed trial's message in full (it follows its
    "Error in ..." line), then the last lines naming errors (or the last lines)."""
    import glob
    lines = []
    for f in sorted(glob.glob(os.path.join(work_dir, "logs", "*.log"))):
        lines += open(f, errors="replace").read().splitlines()
    first = next((i for i, ln in enumerate(lines) if re.search(r"Error in (building|running)", ln)), None)
    message = []
    if first is not None:
        for ln in lines[first + 1:]:
            if re.match(r"\d{4}-\d\d-\d\d ", ln):        # the next log record
                break
            message.append(ln.strip())
    bad = [ln for ln in lines if "rror" in ln or "fail" in ln.lower()]
    return (" ".join(message)[-900:] + " || " if message else "") + " | ".join((bad or lines)[-4:])[-500:]


@contextlib.contextmanager
def _stdout_to_stderr():
    """MetaSchedule prints its tables on stdout (from C++ too); stdout is this tool's JSON lines."""
    sys.stdout.flush()
    keep = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(keep, 1)
        os.close(keep)


def dlight(op: str, shape: dict) -> dict:
    from kernels import build
    return timed(op, shape, build.dlight_module(op, shape), "cuda")


def ours(op: str, shape: dict, target: str, trials: int, seed: int) -> dict:
    from kernels import build
    from kernels.knobs import knob_class, parse_knobs
    from kernels.tune import tune
    def progress(_, history):       # on stderr: a step that runs out of time shows which candidate it was on
        h = history[-1]
        print(f"  trial {len(history)}: {h.median_ms if h.ok else h.error[:120]} ms  {h.knobs}", file=sys.stderr,
              flush=True)
    print(f"{op} {shape}", file=sys.stderr, flush=True)
    t = tune(op, shape, target, trials, seed=seed, record=False, progress=progress)
    k = parse_knobs(op, target, t.best_knobs, knob_class(op, target)())
    _, mod, _ = build.compiled(op, tuple(shape.items()), k, target)
    return {**timed(op, shape, mod, target), "knobs": t.best_knobs, "trials": t.trials,
            "failed": [f"{h.knobs}: {h.error}" for h in t.history if not h.ok],
            "search_s": round(t.search_s, 1), "best_preset_ms": _preset_ms(op, shape, target)}


def _preset_ms(op, shape, target):
    from kernels import build
    from kernels.knobs import preset
    try:
        _, mod, _ = build.compiled(op, tuple(shape.items()), preset(op, target, "best", shape), target)
        return timed(op, shape, mod, target)["median_ms"]
    except Exception:           # noqa: BLE001
        return None


def side(op: str, shape: dict, target: str, trials: int, seed: int, with_ms: bool, with_dlight: bool = True) -> dict:
    """One shape: every anchor, each guarded (one that fails is recorded with its sentence, the rest go on)."""
    from kernels import build
    row = {"op": op, "shape": shape, "target": target, "device": build.device_name(target), "trials": trials,
           "seed": seed}
    row["vendor"], row["vendor_ms"] = vendor_ms(op, shape, target)
    if target == "cpu":                 # which BLAS kernel numpy ran (the OPENBLAS_* variables change it)
        row["blas"] = blas()
    parts = [("ours", lambda: ours(op, shape, target, trials, seed))] \
        + ([("dlight", lambda: dlight(op, shape))] if target == "cuda" and with_dlight else []) \
        + ([("metaschedule", lambda: metaschedule(op, shape, target, trials, seed))] if with_ms else [])
    for name, f in parts:
        try:
            row[name] = f()
        except Exception as e:      # noqa: BLE001
            row[name] = {"error": f"{type(e).__name__}: {str(e).strip()[-300:]}"}
    row["vendor_ms_after"] = vendor_ms(op, shape, target)[1]        # the library again, after the searches
    for name, _ in parts:
        ms = row[name].get("median_ms")
        if ms:
            row[name]["vs_vendor"] = round(min(row["vendor_ms"], row["vendor_ms_after"]) / ms, 4)
    return row


def _shape(text: str) -> dict:
    return {k: int(v) for k, v in (x.split("=") for x in text.split(","))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.anchors", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a1 = sub.add_parser("side", help="one shape, every anchor")
    a1.add_argument("--op", required=True, choices=OPS)
    a1.add_argument("--shape", required=True)
    a2 = sub.add_parser("suite", help="held-out shapes drawn at run time, ours and the vendor library")
    a2.add_argument("--per-op", type=int, default=20)
    a2.add_argument("--ops", default=",".join(OPS))
    a2.add_argument("--budget-s", type=float, default=1e9, help="stop starting shapes after this many seconds")
    a2.add_argument("--first", type=int, default=0, help="skip the first N shapes of the draw (a later call)")
    a2.add_argument("--count", type=int, default=None, help="run at most N shapes (from --first on)")
    for a in (a1, a2):
        a.add_argument("--target", default="cuda", choices=("cpu", "cuda"))
        a.add_argument("--trials", type=int, default=32)
        a.add_argument("--seed", type=int, default=None, help="default: taken from the clock (and printed)")
        a.add_argument("--no-ms", action="store_true", help="leave MetaSchedule out")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int(time.time()) % 1_000_000_007
    print(f"seed {seed}", file=sys.stderr, flush=True)
    if a.cmd == "side":
        print(json.dumps(side(a.op, _shape(a.shape), a.target, a.trials, seed, not a.no_ms)), flush=True)
        return 0
    t0 = time.perf_counter()
    todo = suite_shapes(a.ops.split(","), a.per_op, seed, a.target)
    last = len(todo) if a.count is None else min(len(todo), a.first + a.count)
    for i, (op, s) in enumerate(todo):
        if i < a.first or i >= last:
            continue
        if time.perf_counter() - t0 > a.budget_s:
            print(f"budget spent after {i} of {len(todo)} shapes; go on with --seed {seed} --first {i}",
                  file=sys.stderr)
            break
        row = side(op, s, a.target, a.trials, seed, not a.no_ms, with_dlight=False)
        row["draw"] = {"seed": seed, "index": i, "per_op": a.per_op, "ops": a.ops}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
