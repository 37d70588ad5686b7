"""Nsight Compute on the GPU: this project's kernels (and the reference libraries' calls) launched once each under
`ncu`, its log read into one JSON document on stdout (progress on stderr).

    python3 -m bench.ncu counters [--kernel OP:SHAPE:PRESET:KNOBS ..] [--presets] [--metrics M,..]
    python3 -m bench.ncu gemm [--sizes 4096,..] [--over best] [--metrics stalls|M,.. | --sections S,.. |
                          --pc-sampling] [--no-reference] VARIANT..
    python3 -m bench.ncu references
    python3 -m bench.ncu launch SPEC.json              what ncu runs: each kernel SPEC names, launched once

`counters`: the memory-instruction counters of data/ncu_h200.csv (COUNTERS) for each kernel given (OP:SHAPE:
PRESET:KNOBS, e.g. gemm:M=1000,N=1024,K=1000:best:stages=3; PRESET or KNOBS may be empty: KNOBS alone pins every
knob), or each shipped preset at its operator's speed-test shape (--presets); one row per kernel, the counters
of its launches summed (bench.ncu_data.counter_rows).
`gemm`: GEMM variants (bench.variants: NAME or NAME=SPEC over --over) at each size, then cuBLAS (TF32 off) at it,
with Nsight Compute's stall reasons (--metrics stalls, STALLS), other metrics, the sections' headline values
(--sections, SECTION_VALUES), or PC sampling (--pc-sampling: the SourceCounters and WarpStateStats sections,
exported as the SASS source page and read for where the longest loop's warps stall, by opcode); each kernel named
in launch order.
`references`: for each of REFERENCE_ROWS, best's kernel and then the reference library's call, their device
time (gpu__time_duration, no host launch overhead), and the shortest kernel of the log (what one launch costs).
The plans under bench/plans name these commands (data/ncu_h200.csv, h200_gemm_stalls, h200_gemm_why,
h200_gemm_l2, h200_gemm_pc_sampling, h200_ref_kernels). NCU names the ncu binary (default: ncu on the PATH).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OPS = ("gemm", "conv1d", "dwconv2d", "dwsep_conv2d")
COUNTERS = ("smsp__inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_st.sum",
            "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "smsp__inst_executed_op_ldgsts.sum",
            "gpu__time_duration.sum")
STALLS = [f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
    "short_scoreboard", "sleeping", "tex_throttle", "wait")] + [
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__warps_active.avg.per_cycle_active", "gpu__time_duration.sum",
    "launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem"]
METRIC_SETS = {"counters": list(COUNTERS), "stalls": STALLS}
SECTION_VALUES = ("Duration", "Compute (SM) Throughput", "Memory Throughput", "Achieved Occupancy",
                  "Theoretical Occupancy", "Registers Per Thread", "Block Size", "Grid Size", "Waves Per SM",
                  "Warp Cycles Per Issued Instruction", "Block Limit Registers", "Block Limit Shared Mem")
REFERENCE_ROWS = [("gemm", {"M": 1024, "N": 1024, "K": 1024}), ("conv1d", {"M": 1024, "N": 1024}),
                  ("dwconv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3}),
                  ("dwconv2d", {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3})]


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def device() -> str:
    from kernels import build
    return build.device_name("cuda")


# ------------------------------------------------------------------ what to launch
def kernel_spec(text: str) -> dict:
    """OP:SHAPE:PRESET:KNOBS -> {op, shape, preset, knobs} (PRESET and KNOBS may be empty)."""
    parts = text.split(":")
    if len(parts) != 4 or parts[0] not in OPS:
        raise ValueError(f"--kernel {text!r}: write OP:SHAPE:PRESET:KNOBS (OP one of {', '.join(OPS)}; PRESET or "
                         "KNOBS may be empty), e.g. gemm:M=1000,N=1024,K=1000:best:stages=3")
    op, shape, preset, knobs = parts
    s = {k: int(v) for k, v in (x.split("=") for x in shape.split(","))}
    return {"op": op, "shape": s, "preset": preset or None, "knobs": knobs or None}


def preset_kernels() -> list[dict]:
    """Every shipped preset of every operator at the operator's speed-test shape."""
    from kernels.knobs import PRESET_NAMES
    from kernels.ops import OPS as OPDEFS
    return [{"op": op, "shape": dict(o.sizes["speed test"]), "preset": p, "knobs": None}
            for op, o in OPDEFS.items() for p in PRESET_NAMES]


def _args_for(op: str, s: dict):
    import tvm
    from kernels.ops import OPS as OPDEFS
    o = OPDEFS[op]
    xs = o.random_inputs(s, np.random.default_rng(0))
    dev = tvm.cuda(0)
    args = [tvm.runtime.tensor(x, dev) for x in xs]
    args.append(tvm.runtime.tensor(np.zeros(o.output_shape(s), "float32"), dev))
    return xs, args


def _launch_kernels(items: list[dict]) -> list[dict]:
    """Compile every listed kernel, then launch each once, in order; a kernel that does not build is left out,
    and said so."""
    import tvm
    from kernels import build
    from kernels.knobs import resolve
    mods, launched = [], []
    for it in items:
        try:
            k = resolve(it["op"], "cuda", it["shape"], it.get("preset"), it.get("knobs"))
            _, mod, _ = build.compiled(it["op"], tuple(it["shape"].items()), k, "cuda")
        except Exception as e:      # noqa: BLE001
            log(f"not launched: {it}: {type(e).__name__}: {str(e)[-200:]}")
            continue
        launched.append(it)
        mods.append((mod, _args_for(it["op"], it["shape"])[1]))
    for mod, args in mods:
        mod["main"](*args)
        tvm.cuda(0).sync()
    log(f"launched {len(mods)} kernels")
    return launched


def _launch_gemm(spec: dict) -> list[dict]:
    """Each variant, then cuBLAS, once at each size on the same inputs; [{who, shape}] in launch order."""
    import torch
    import tvm
    from . import variants as V
    torch.backends.cuda.matmul.allow_tf32 = False
    out = []
    for s in spec["shapes"]:
        xs, args = _args_for("gemm", s)
        for v in spec["variants"]:
            name, vspec = V.parse(v)
            try:
                mod = V.module(name, vspec, s, spec.get("over", "best"))[3]
                mod["main"](*args)
                tvm.cuda(0).sync()
                out.append({"who": name, "shape": s})
            except Exception as e:  # noqa: BLE001
                log(f"not launched: {name} at {s}: {type(e).__name__}: {str(e)[-200:]}")
            finally:
                V.dynamic(False)
        if spec.get("reference", True):
            a, b = (torch.from_numpy(x).cuda() for x in xs)
            torch.matmul(a, b)
            torch.cuda.synchronize()
            out.append({"who": "cuBLAS", "shape": s})
        log("launched", [o["who"] for o in out if o["shape"] == s], "at", s)
    return out


def _launch_references(rows: list) -> list:
    """Per row: best's kernel once, then the reference library's call (its warm-up, capture and one replay), then
    a marker kernel (torch.cuda._sleep) that ends the row."""
    import torch
    import tvm
    from kernels import build
    from kernels.knobs import knobs_text, preset
    out = []
    for op, shape in rows:
        k = preset(op, "cuda", "best", shape)
        _, mod, _ = build.compiled(op, tuple(shape.items()), k, "cuda")
        xs, args = _args_for(op, shape)
        mod["main"](*args)
        tvm.cuda(0).sync()
        name, fn, sync = build.reference_timer(op, "cuda", xs, fill=False)
        torch.cuda.synchronize()
        fn()
        sync()
        torch.cuda._sleep(1000)         # a marker kernel between rows
        torch.cuda.synchronize()
        out.append({"op": op, "shape": shape, "best_knobs": knobs_text(k), "reference": name})
        log(f"launched best and {name} at {op} {shape}")
    return out


def launch(spec_file: str) -> None:
    spec = json.load(open(spec_file))
    got = {"kernels": lambda: _launch_kernels(spec["kernels"]), "gemm": lambda: _launch_gemm(spec),
           "references": lambda: _launch_references(spec["rows"])}[spec["kind"]]()
    json.dump(got, open(spec["report"], "w"), indent=1)


# ------------------------------------------------------------------ running ncu
def run_ncu(ncu_args: list[str], spec: dict, timeout_s: float, csv: bool = True) -> tuple[str, list]:
    """ncu over `python3 -m bench.ncu launch SPEC`: its stdout (the CSV log) and what the launch reported."""
    with tempfile.TemporaryDirectory(prefix="ncu-") as d:
        spec = dict(spec, report=os.path.join(d, "launched.json"))
        json.dump(spec, open(os.path.join(d, "spec.json"), "w"))
        cmd = [os.environ.get("NCU", "ncu"), "--clock-control", "none", *ncu_args,
               *(["--csv", "--print-units", "base"] if csv else []),
               sys.executable, "-m", "bench.ncu", "launch", os.path.join(d, "spec.json")]
        log("$", " ".join(cmd))
        try:
            p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
            text, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = f"ncu stopped after {timeout_s} s", "timeout"
        log(f"ncu exit {rc}", *err.strip().splitlines()[-3:])
        launched = json.load(open(spec["report"])) if os.path.exists(spec["report"]) else None
        if launched is None:
            raise RuntimeError(f"the launch under ncu reported nothing (ncu exit {rc}): {err.strip()[-400:]}")
        return text, launched


def counters(items: list[dict], metrics: list[str], timeout_s: float) -> dict:
    from kernels import build
    from .ncu_data import counter_rows
    text, launched = run_ncu(["--kernel-name", "regex:main_kernel", "--metrics", ",".join(metrics)],
                             {"kind": "kernels", "kernels": items}, timeout_s)
    tvm_version = build.versions().split(",")[0].replace("tvm ", "")
    date = now()
    rows = counter_rows(text, launched, device=device(), date=date, tvm=tvm_version)
    left = [it for it in items if it not in launched]
    return {"device": device(), "date": date, "tvm": tvm_version, "metrics": metrics, "rows": rows,
            **({"not_launched": left} if left else {})}


def named(kernels: list[dict], expected: list[dict]) -> list[dict]:
    """The log's kernels named in launch order: a TVM kernel (main_kernel) takes the next expected variant, any
    other kernel the next expected cuBLAS."""
    out, i = [], 0
    for k in kernels:
        tvm_kernel = "main_kernel" in k["kernel"]
        while i < len(expected) and (expected[i]["who"] == "cuBLAS") == tvm_kernel:
            i += 1
        e = expected[i] if i < len(expected) else {"who": "?", "shape": {}}
        i += 1
        out.append({"who": e["who"], "shape": e["shape"], **k})
    return out


def gemm(variants: list[str], shapes: list[dict], over: str, metrics: list[str] | None, sections: list[str] | None,
         pc: bool, reference: bool, timeout_s: float) -> dict:
    from .ncu_data import by_kernel
    spec = {"kind": "gemm", "shapes": shapes, "variants": variants, "over": over, "reference": reference}
    regex = ["--kernel-name", "regex:main_kernel|gemm" if reference else "regex:main_kernel"]
    doc = {"device": device(), "date": now(), "over": over}
    if pc:
        with tempfile.TemporaryDirectory(prefix="ncu-rep-") as d:
            rep = os.path.join(d, "pc")
            _, launched = run_ncu([*regex, "--section", "SourceCounters", "--section", "WarpStateStats", "-f",
                                   "-o", rep], spec, timeout_s, csv=False)
            p = subprocess.run([os.environ.get("NCU", "ncu"), "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                                "--print-source", "sass"], capture_output=True, text=True, timeout=timeout_s)
            log(f"export exit {p.returncode}", *p.stderr.strip().splitlines()[-2:])
        ks = pc_sampling(p.stdout)
        doc.update(units="PC-sampling samples (Nsight Compute SourceCounters) summed over the loop's instructions",
                   kernels=named(ks, launched))
        return doc
    if sections:
        args = [a for s in sections for a in ("--section", s)]
        text, launched = run_ncu([*regex, *args], spec, timeout_s)
        ks = [{"kernel": k["kernel"], **{m: k[m] for m in SECTION_VALUES if m in k}} for k in by_kernel(text)]
        doc.update(sections=sections, units="Duration ns; throughputs and occupancy % of peak",
                   kernels=named(ks, launched))
        return doc
    text, launched = run_ncu([*regex, "--metrics", ",".join(metrics)], spec, timeout_s)
    doc.update(metrics=metrics, kernels=named(by_kernel(text), launched))
    return doc


def references(rows: list, timeout_s: float) -> dict:
    from .ncu_data import rows as csv_rows
    text, launched = run_ncu(["--metrics", "gpu__time_duration.sum"], {"kind": "references", "rows": rows},
                             timeout_s)
    groups, cur = [], []
    for r in sorted(csv_rows(text), key=lambda r: int(r["ID"])):
        name, ns = r["Kernel Name"], float(r["Metric Value"].replace(",", ""))
        if "spin_kernel" in name:
            groups.append(cur)
            cur = []
        else:
            cur.append((name, ns))
    out = []
    for row, kernels in zip(launched, groups):
        ref = [k for k in kernels if "main_kernel" not in k[0]]
        best = [ns for name, ns in kernels if "main_kernel" in name]
        name, ns = ref[-1]              # the replayed call (the earlier ones are warm-up and capture)
        out.append({"op": row["op"], "shape": row["shape"], "reference_kernel": name, "reference_ns": ns,
                    "best_ns": sum(best) if best else None, "best_knobs": row["best_knobs"]})
    every = [k for g in groups for k in g if "main_kernel" not in k[0]]
    small = min(every, key=lambda k: k[1])
    return {"device": device(), "date": now(),
            "smallest_kernel": {"name": small[0], "ns": small[1],
                                "why": "the shortest device time of any kernel in the log (a fill of a few "
                                       "elements): about what one launch costs on the GPU, whatever it does"},
            "metric": "gpu__time_duration.sum (ncu --clock-control none), one launch each", "rows": out}


# ------------------------------------------------------------------ PC sampling, read
def _num(x: str) -> float:
    """An ncu export's number ("1,234", or empty for none)."""
    return float(x.replace(",", "") or 0)


def pc_sampling(csv_text: str) -> list[dict]:
    """Per kernel of an ncu source-page export (ncu -i REP --page source --csv --print-source sass): the
    warp-state samples of its longest loop (the backward branch spanning the most FFMAs) by opcode, and the
    instructions with the most dispatch-stall samples."""
    import csv
    import io
    from collections import Counter, defaultdict
    out = []
    for part in re.split(r'^"Kernel Name",', csv_text, flags=re.M)[1:]:
        name, body = part.split("\n", 1)
        rows = list(csv.DictReader(io.StringIO(body)))
        ops = [(r["Source"].split() or ["?"]) for r in rows]
        ops = [[w for w in o if not w.startswith("@")] or ["?"] for o in ops]
        opcode = [o[0].split(".")[0] for o in ops]
        addr = [int(r["Address"], 16) for r in rows]
        loops = []
        for i, o in enumerate(ops):
            m = re.search(r"0x([0-9a-f]+)", " ".join(o[1:])) if opcode[i] == "BRA" else None
            j = addr.index(int(m.group(1), 16)) if m and int(m.group(1), 16) in addr else i
            if j < i:                               # a backward branch: the loop [j, i]
                loops.append((sum(opcode[k] == "FFMA" for k in range(j, i + 1)), j, i))
        _, j, i = max(loops)
        reasons = [c for c in rows[0] if c.startswith("stall_") and not c.endswith("(Not Issued)")]
        by_op: dict = defaultdict(Counter)
        count = Counter(opcode[j:i + 1])
        for k in range(j, i + 1):
            for c in reasons:
                by_op[c][opcode[k]] += _num(rows[k][c])
        total = {c: sum(v.values()) for c, v in by_op.items()}
        top = sorted(range(j, i + 1), key=lambda k: -_num(rows[k]["stall_dispatch"]))[:12]
        out.append({"kernel": name.strip('",'), "loop_instructions": i - j + 1,
                    "loop_opcodes": dict(count.most_common()),
                    "loop_samples": {c: int(v) for c, v in total.items() if v},
                    "dispatch_share_by_opcode": {o: round(v / max(total["stall_dispatch"], 1), 4)
                                                 for o, v in by_op["stall_dispatch"].most_common(8)},
                    "dispatch_per_instruction_by_opcode": {o: round(v / count[o], 1)
                                                           for o, v in by_op["stall_dispatch"].most_common(8)},
                    "top_dispatch_instructions": [{"offset": addr[k] - addr[j], "sass": rows[k]["Source"].strip(),
                                                   "dispatch_samples": int(_num(rows[k]["stall_dispatch"]))}
                                                  for k in top]})
    return out


# ------------------------------------------------------------------ command line
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m bench.ncu", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("counters", help="data/ncu_h200.csv's counters of the kernels given")
    c.add_argument("--kernel", action="append", default=[], metavar="OP:SHAPE:PRESET:KNOBS")
    c.add_argument("--presets", action="store_true", help="every shipped preset at its operator's speed-test shape")
    c.add_argument("--metrics", help=f"extra metrics beside {len(COUNTERS)} COUNTERS")
    g = sub.add_parser("gemm", help="GEMM variants and cuBLAS: metrics, sections or PC sampling")
    g.add_argument("--sizes", help="N,.. (N^3; default 4096)")
    g.add_argument("--shapes", help="MxNxK,..")
    g.add_argument("--over", default="best", help="what a variant's knob text applies over (bench.variants)")
    what = g.add_mutually_exclusive_group(required=True)
    what.add_argument("--metrics", help=f"a set ({', '.join(METRIC_SETS)}) or metric names, comma-separated")
    what.add_argument("--sections", help="ncu sections, comma-separated (their SECTION_VALUES are kept)")
    what.add_argument("--pc-sampling", action="store_true", help="where the longest loop's warps stall, by opcode")
    g.add_argument("--no-reference", action="store_true", help="launch no cuBLAS")
    g.add_argument("variants", nargs="+", metavar="VARIANT", help="NAME or NAME=SPEC (bench.variants)")
    sub.add_parser("references", help="best and the reference library's kernels, device time")
    for x in sub.choices.values():
        x.add_argument("--timeout-s", type=float, default=540, help="ncu's own time limit")
    ln = sub.add_parser("launch", help="(run by ncu) launch what SPEC names, once each")
    ln.add_argument("spec")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.cmd == "launch":
        launch(a.spec)
        return 0
    if a.cmd == "counters":
        items = [kernel_spec(k) for k in a.kernel] + (preset_kernels() if a.presets else [])
        if not items:
            raise SystemExit("give --kernel OP:SHAPE:PRESET:KNOBS (repeated) or --presets")
        metrics = list(COUNTERS) + [m for m in (a.metrics or "").split(",") if m and m not in COUNTERS]
        doc = counters(items, metrics, a.timeout_s)
    elif a.cmd == "gemm":
        from .variants import shapes_arg
        shapes = shapes_arg(a.sizes, a.shapes) if (a.sizes or a.shapes) else [{"M": 4096, "N": 4096, "K": 4096}]
        metrics = None
        if a.metrics:
            metrics = [m for x in a.metrics.split(",") for m in METRIC_SETS.get(x, [x])]
        doc = gemm(a.variants, shapes, a.over, metrics, a.sections.split(",") if a.sections else None,
                   a.pc_sampling, not a.no_reference, a.timeout_s)
    else:
        doc = references(REFERENCE_ROWS, a.timeout_s)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
