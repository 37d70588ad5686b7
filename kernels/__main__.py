"""The command line: python -m kernels list|run|traffic|source (see README)."""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import build, results
from .knobs import KNOBS, PRESET_NAMES, KnobError, fields_of, knobs_text, parse_shape, resolve
from .ops import OPS

TARGETS = ("cpu", "cuda", "fpga")          # fpga: a VTA-style accelerator, simulated (kernels/fpga)


class _Parser(argparse.ArgumentParser):
    def error(self, message):           # argparse's own errors: one line, status 2, like ours
        print(f"error: {message}; see {self.prog} --help.", file=sys.stderr)
        sys.exit(2)


def _fail(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def _common(p):
    p.add_argument("--op", required=True, help=", ".join(OPS))
    p.add_argument("--shape", help="K=V,.. e.g. M=1024,N=1024,K=1024 (default: the operator's speed-test size)")
    p.add_argument("--target", default="cpu", help=", ".join(TARGETS))
    p.add_argument("--preset", help=", ".join(PRESET_NAMES))
    p.add_argument("--knobs", help="k=v,.. overrides on top of the preset (or the defaults)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _resolve(a):
    if a.op not in OPS:
        raise KnobError([f"Unknown operator '{a.op}'; choose one of {', '.join(OPS)}."])
    if a.target not in TARGETS:
        raise KnobError([f"Unknown target '{a.target}'; choose one of {', '.join(TARGETS)}."])
    shape = parse_shape(a.op, a.shape) if a.shape else dict(OPS[a.op].sizes["speed test"])
    if a.preset == "best" and not a.knobs and a.target != "fpga":     # a tuned winner for this shape and device
        from .tune import tuned_best
        got = tuned_best(a.op, a.target, shape)
        if got is not None:
            print(got[1], file=sys.stderr)
            return shape, resolve(a.op, a.target, shape, None, got[0])
    return shape, resolve(a.op, a.target, shape, a.preset, a.knobs)


def cmd_list(a):
    info = {
        "operators": {n: {"title": o.title, "math": o.math, "dims": list(o.dims), "sizes": o.sizes} for n, o in OPS.items()},
        "presets": list(PRESET_NAMES),
        "targets": {t: (build.target_available(t) or "available") for t in TARGETS},
        "knobs": {f"{op}/{t}": {n: {"default": f.default, "help": f.metadata["help"], "choices": f.metadata["choices"]}
                                for n, f in fields_of(cls()).items()} for (op, t), cls in KNOBS.items()},
    }
    if a.json:
        print(json.dumps(info))
        return
    print("operators:")
    for n, o in OPS.items():
        print(f"  {n:13s} {o.math}   shape {','.join(o.dims)}")
    print("presets:  ", ", ".join(PRESET_NAMES))
    print("targets:  ", ", ".join(f"{t} ({v})" for t, v in info["targets"].items()))
    for key, ks in info["knobs"].items():
        print(f"knobs {key}: " + ", ".join(f"{n}={v['default']}" for n, v in ks.items()))


def cmd_run(a):
    shape, knobs = _resolve(a)
    pool = a.rpc if a.rpc is not None else os.environ.get("KERNEL_LAB_RPC", "")     # kernels.remote.ENV
    if pool and not (a.target == "fpga" and a.rpc is None):     # the simulator runs here whatever the default
        return _run_remote(a, shape, knobs, pool)
    why = build.target_available(a.target)
    if why:
        _fail(why + " Use --target cpu, or run on a machine with a GPU.")
    from .limits import memory_problems
    too_big = memory_problems(a.op, shape, a.target, build.free_device_bytes(a.target))
    if too_big:
        _fail(too_big[0])
    r = build.run(a.op, shape, knobs, a.target, repeat=a.repeat)
    if a.record:
        results.record(r, preset=a.preset or "")
    if a.target == "fpga":              # simulated: say so, and where the cycles went
        from .fpga import cli as fpga_cli
        return fpga_cli.print_run(a, shape, knobs, r)
    _print_run(a, shape, r)


def _run_remote(a, shape, knobs, text: str):
    """The same run on a server of an RPC tracker's pool (kernels/remote.py); recorded with source rpc:KEY."""
    from . import remote
    from .limits import memory_problems
    too_big = memory_problems(a.op, shape, a.target)     # inputs and the float64 reference are made here
    if too_big:
        _fail(too_big[0])
    try:
        pool = remote.parse(text, "--rpc" if a.rpc is not None else remote.ENV)
        r = remote.run(a.op, shape, knobs, a.target, pool, repeat=a.repeat, wait_s=a.rpc_wait,
                       session_s=a.rpc_timeout)
    except remote.RemoteError as e:
        _fail(str(e))
    if a.record:
        results.record(r, preset=a.preset or "", source=f"rpc:{pool.key}")
    _print_run(a, shape, r)


def _print_run(a, shape, r):
    if a.json:
        print(json.dumps({**r.as_dict(), "preset": a.preset or ""}))
        return
    ref = f"; {r.ref}: {r.ref_ms:.4f} ms, kernel is {r.vs_ref:.2f}x its speed" if r.ref_ms else ""
    print(f"{a.op} {shape} on {r.device}: {r.median_ms:.4f} ms (IQR {r.spread_ms:.4f}), {r.gflops:.1f} GFLOP/s, "
          f"{r.gbps:.1f} GB/s, rel. error {r.rel_err:.2e} {'ok' if r.ok else 'FAILED'}{ref}"
          + (f" (kernel timed by {r.timer})" if r.timer else ""))
    if r.note:
        print(r.note)


def cmd_traffic(a):
    from . import traffic
    shape, knobs = _resolve(a)
    if a.target == "fpga":              # counted by the simulator: bytes per buffer level, GEMM-core operations
        from .fpga import cli as fpga_cli
        return fpga_cli.print_traffic(a, shape, knobs)
    c = traffic.counts(a.op, shape, knobs, a.target)
    out = {"op": a.op, "shape": shape, "target": a.target, "knobs": knobs_text(knobs), **c.as_dict()}
    if a.json:
        print(json.dumps(out))
        return
    print("What the schedule asks for (TensorIR, elements):")
    for t, lv in c.per_tensor.items():
        print(f"  {t:10s} " + "  ".join(f"{lvl}: r {v['read']:,} w {v['write']:,}" for lvl, v in lv.items()))
    if c.ncu:
        print(f"What the machine executes (the SASS, emulated; {c.machine['sass_hash'][:12]}):")
    for m, v in c.ncu.items():
        print(f"  {m:55s} {v:,}")
    for d in c.differences:
        print(f"  - {d}")
    if "error" in c.machine:
        print(c.machine["error"])


def cmd_source(a):
    shape, knobs = _resolve(a)
    ir = a.ir or ("lowered" if a.target == "fpga" else "tir")     # fpga: the TensorIR the simulator runs
    if a.target == "fpga" and ir not in ("tir", "lowered"):
        _fail(f"--ir {ir} does not exist for --target fpga (nothing is compiled: the simulator runs the lowered "
              "TensorIR); use --ir lowered or tir.")
    if ir == "cuda" and a.target != "cuda" or ir in ("llvm", "llvm-ir") and a.target != "cpu":
        _fail(f"--ir {ir} does not exist for --target {a.target}; use --ir tir, or "
              f"{'cuda' if a.target == 'cuda' else 'llvm'}.")
    text = build.source(a.op, shape, knobs, a.target, ir)
    print(json.dumps({"op": a.op, "target": a.target, "ir": ir, "source": text}) if a.json else text)


def cmd_tune(a):
    from . import tune
    if a.op not in OPS:
        raise KnobError([f"Unknown operator '{a.op}'; choose one of {', '.join(OPS)}."])
    if a.target not in ("cpu", "cuda"):
        raise KnobError([f"tune measures cpu and cuda kernels, not '{a.target}'; use --target cpu or cuda."])
    shape = parse_shape(a.op, a.shape) if a.shape else dict(OPS[a.op].sizes["speed test"])
    pool = a.rpc if a.rpc is not None else os.environ.get("KERNEL_LAB_RPC", "")

    def progress(f, history):
        t = history[-1]
        if not a.json:
            print(f"trial {len(history):3d}: {t.median_ms if t.median_ms is not None else float('nan'):10.4f} ms "
                  f"(predicted {t.predicted_ms:.4f}) {t.knobs}{'  ' + t.error if t.error else ''}", flush=True)
    try:
        r = tune.tune(a.op, shape, a.target, a.trials, rpc=pool or None, progress=progress, seed=a.seed)
    except Exception as e:      # noqa: BLE001 - remote faults and failed searches are sentences
        from .remote import RemoteError
        if isinstance(e, (RemoteError, KnobError)):
            _fail(" ".join(e.problems) if isinstance(e, KnobError) else str(e))
        raise
    out = {k: v for k, v in r.as_dict().items() if k != "history"}
    out["trials_detail"] = r.as_dict()["history"]
    if a.json:
        print(json.dumps(out))
        return
    ref = f", {r.vs_ref:.2f}x {r.ref}" if r.vs_ref else ""
    print(f"best of {r.trials} trials on {r.device}: {r.median_ms:.4f} ms{ref} ({r.search_s:.0f} s): {r.best_knobs}")


def main(argv=None) -> None:
    p = _Parser(prog="python -m kernels", description="Kernel Lab: schedules, kernels and their memory traffic.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    pl = sub.add_parser("list", help="operators, presets, knobs, targets available here")
    pl.add_argument("--json", action="store_true")
    pr = sub.add_parser("run", help="compile, verify and time one kernel")
    _common(pr)
    pr.add_argument("--repeat", type=int, default=5, help="timed repeats (median reported)")
    pr.add_argument("--record", action="store_true", help="append the run to the results store")
    pr.add_argument("--rpc", metavar="HOST:PORT:KEY", help="run on a server of this RPC tracker's pool under KEY "
                    "(default: $KERNEL_LAB_RPC; '' runs here)")
    pr.add_argument("--rpc-wait", type=float, default=60.0, metavar="S", help="seconds to wait for a free server")
    pr.add_argument("--rpc-timeout", type=float, default=600.0, metavar="S",
                    help="seconds the server keeps the session before it ends it")
    pt = sub.add_parser("traffic", help="per-level memory traffic and Nsight Compute predictions")
    _common(pt)
    ps = sub.add_parser("source", help="the TensorIR, CUDA C or LLVM assembly of a schedule")
    _common(ps)
    ps.add_argument("--ir", choices=("tir", "lowered", "cuda", "llvm", "llvm-ir"))
    pu = sub.add_parser("tune", help="search the knob space for this shape and device (every trial recorded)")
    pu.add_argument("--op", required=True, help=", ".join(OPS))
    pu.add_argument("--shape", help="K=V,.. (default: the operator's speed-test size)")
    pu.add_argument("--target", default="cpu", help="cpu or cuda")
    pu.add_argument("--trials", type=int, default=32, help="candidates to build, verify and time")
    pu.add_argument("--seed", type=int, help="the search's random seed")
    pu.add_argument("--rpc", metavar="HOST:PORT:KEY", help="measure on every free server of this pool's KEY "
                    "(default: $KERNEL_LAB_RPC)")
    pu.add_argument("--json", action="store_true", help="print one JSON object")
    a = p.parse_args(argv)
    if getattr(a, "trials", 1) < 1:
        _fail("--trials must be at least 1.")
    if getattr(a, "repeat", 1) < 1:
        _fail("--repeat must be at least 1.")
    if getattr(a, "rpc_wait", 1) <= 0 or getattr(a, "rpc_timeout", 1) <= 0:
        _fail("--rpc-wait and --rpc-timeout must be positive seconds.")
    try:
        {"list": cmd_list, "run": cmd_run, "traffic": cmd_traffic, "source": cmd_source, "tune": cmd_tune}[a.cmd](a)
    except KnobError as e:
        _fail(" ".join(e.problems))


if __name__ == "__main__":
    main()
