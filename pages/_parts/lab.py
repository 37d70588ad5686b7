"""The Lab's cached calls into kernels/ and its generated knob widgets; pages/lab.py stays a layout script.

Every call here is keyed by (op, shape, knobs, target): knobs are frozen dataclasses, so they hash.
"""
from __future__ import annotations

import glob
import json
import os
import queue
import re
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd
import streamlit as st

import viz

from kernels import build, fpga, results
from kernels import knobs as K
from kernels.ops import OPS
from kernels.records import Counts

from .recorded import bench_tables

try:                                 # the simulator; the Lab still compiles and runs kernels without it
    from kernels import traffic
    TRAFFIC_MISSING = None
except Exception as e:              # noqa: BLE001 - any import failure becomes one sentence on the page
    traffic = None
    TRAFFIC_MISSING = f"The simulator (kernels/traffic.py) could not be imported: {type(e).__name__}: {e}"

TARGETS = ("cpu", "cuda", "fpga")
SIZES = ("speed test", "large", "custom")
DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data")
H200_DATASHEET = {"compute": ("H200 SXM FP32 67 TFLOP/s (datasheet)", 67_000.0),
                  "memory": ("H200 HBM3e 4.8 TB/s (datasheet)", 4_800.0)}


def sentences(exc: BaseException) -> list[str]:
    """What went wrong, as sentences for st.error (never a traceback)."""
    if isinstance(exc, K.KnobError):
        return list(exc.problems)
    if isinstance(exc, Pending):
        return [str(exc)]
    msg = str(exc).strip().splitlines()
    return [f"{type(exc).__name__}: {msg[-1] if msg else ''}".rstrip(": ")]


# ---------------------------------------------------------------- the fpga target's words
# The fpga trace and counts use the levels global / shared / register (so the colours carry over); on this
# target they are DRAM, the on-chip input/weight buffers and the GEMM core's accumulator registers.
FPGA_NAMES = dict(fpga.LEVEL_NAMES)


def fpga_phase(recs) -> str:
    """One accelerator instruction's name, from what its accesses did (a trace phase is one instruction)."""
    done = {(r.kind, r.level) for r in recs}
    if ("write", "shared") in done:
        return "DMA load"
    if ("write", "global") in done:
        return "DMA store"
    if ("read", "shared") in done:
        return "GEMM"
    return "reset"


FPGA_WORDS = viz.Words(levels=tuple(FPGA_NAMES.items()), phase=fpga_phase, subject="the accelerator",
                       actors=(("DMA load", "the load DMA"), ("DMA store", "the store DMA"),
                               ("GEMM", "the GEMM core"), ("reset", "the GEMM core")))


def level_name(target: str, level: str) -> str:
    """A level as the target calls it (fpga: DRAM / on-chip buffer / GEMM-core registers)."""
    return FPGA_NAMES.get(level, level) if target == "fpga" else level


def level_names(target: str) -> dict[str, str] | None:
    return FPGA_NAMES if target == "fpga" else None


def words(target: str):
    return FPGA_WORDS if target == "fpga" else viz.tile.GPU_WORDS


def unsupported(op: str, target: str) -> str | None:
    """One sentence when the target has no schedule for the operator (the Lab shows it disabled), else None."""
    if (op, target) in K.KNOBS:
        return None
    if target == "fpga":
        names = " and ".join(o for o in OPS if (o, "fpga") in K.KNOBS)
        why = "a depthwise convolution" if op == "dwconv2d" else "its depthwise stage"
        return (f"The fpga target maps only {names} onto its 16 x 16 GEMM core; {OPS[op].title} has no mapping, "
                f"since {why} has no channel reduction to fill the core's 16 input lanes.")
    return f"The {target} target has no schedule for {OPS[op].title}."


def shape_text(shape: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def knob_fields(op: str, target: str):
    return fields(K.knob_class(op, target))


def axis_of(knobs, name: str, shape: dict) -> int | None:
    """The extent of the loop axis a tile/patch/split knob cuts, or None for axis-free knobs."""
    for x, (_, n) in knobs.extents(shape).items():
        if name in ((f"tile_{x}", f"patch_{x}") if x else ("tile", "patch")) or name == f"{x}_split":
            return n
    return None


def int_options(extent: int, value: int, step: int = 1) -> list[int]:
    """Powers of two and divisors of the axis (the values that tile it evenly), plus the current value. With
    a step above 1 (the fpga's tiles: multiples of the GEMM core's 16), only its multiples, up to the axis
    rounded up to the step (the value is kept even when it is not one, so its sentence can say why)."""
    vals = {1 << i for i in range(31) if 1 << i <= extent} | {extent}
    i = 1
    while i * i <= extent:
        if extent % i == 0:
            vals |= {i, extent // i}
        i += 1
    if step > 1:
        vals = {v for v in vals if v % step == 0} | {-(-extent // step) * step}
    return sorted(vals | {value})


def variants(op: str, target: str, knobs, shape: dict) -> dict[str, object]:
    """The current knobs with every operand cache in 'shared' and in 'local' (registers): knobs, or the
    validation sentences when that variant is not a legal kernel. Empty where the target has no such knob."""
    scoped = [f.name for f in fields(knobs) if (f.metadata.get("choices") or ()) == K.SCOPES]
    out = {}
    for label, scope in (("shared-only", "shared"), ("register-only", "local")):
        if not scoped:
            continue
        v = replace(knobs, **dict.fromkeys(scoped, scope))
        out[label] = K.validate(op, target, v, shape) or v
    return out


# ---------------------------------------------------------------- cached simulator calls
# Traces, counts and figures are immutable and shared by every session: cache_resource hands out the
# object itself, where cache_data would unpickle a 10,000-record trace on every rerun (~60 ms each).
def tile_trace(op: str, knobs, target: str):
    """(tiny shape, tiny knobs, Trace) of the drawable tile for these knobs. Keyed by the tiny knobs, so
    knob moves that do not change the drawable tile (a k-split of 16 or 32 both shrink to 1) cost nothing.
    On fpga the accelerator's simulator draws it (fpga.tiny / fpga.trace: one phase per instruction)."""
    s, k = fpga.tiny(op, knobs) if target == "fpga" else traffic.tiny(op, knobs, target)
    return s, k, _trace(op, tuple(s.items()), k, target)


@st.cache_resource(max_entries=512, show_spinner=False)
def _trace(op: str, shape_items: tuple, tiny_knobs, target: str):
    if target == "fpga":
        return fpga.trace(op, dict(shape_items), tiny_knobs)
    return traffic.trace(op, dict(shape_items), tiny_knobs, target)


@st.cache_data(max_entries=64, show_spinner=False)
def sass_table(op: str, shape_items: tuple, knobs, emulated: bool) -> tuple[pd.DataFrame, str]:
    """(one row per memory instruction: kernel, address, instruction, tensor, warps executed, sectors; the
    whole listing). Execution counts only once the emulation is done (`emulated`)."""
    from kernels import sass
    from kernels.sass.emulator import CLASSES
    shape = dict(shape_items)
    c = sass.compiled(op, shape, knobs)
    m = sass.machine_counts(op, shape, knobs) if emulated else None
    rows = []
    for name, k in c.kernels.items():
        for ins in k.instrs:
            if ins.opcode not in CLASSES:
                continue
            level = {"LDG": "global", "STG": "global", "LDGSTS": "global → shared", "LDL": "local",
                     "STL": "local"}.get(ins.opcode, "shared")
            guard = f"@{'!' if ins.guard_not else ''}{ins.guard} " if ins.guard else ""
            rows.append({"kernel": name, "address": f"{ins.pc:04x}", "instruction": guard + ins.text,
                         "level": level,
                         "tensor": (m.pc_tensor.get(name, {}).get(ins.pc, "") if m else "") or
                         ("(spill)" if ins.note == "SpillRefill" else ""),
                         "executed (warps)": m.per_pc.get(name, {}).get(ins.pc, 0) if m else None,
                         "sectors": m.per_pc_sectors.get(name, {}).get(ins.pc) if m else None})
    return pd.DataFrame(rows), c.listing


def sass_mix(op: str, shape_items: tuple, knobs) -> dict:
    """The static instruction mix of the kernel's cubin (kernels.sass.mix), from the compile sass_table made."""
    from kernels import sass
    from kernels.sass.mix import counted
    c = sass.compiled(op, dict(shape_items), knobs)
    return counted(c.kernels, c.cubin)


def mix_caption(m: dict, knobs=None) -> str:
    """One sentence on the machine code's mix, and what many branches in it mean (and, where the knobs have
    pad_tiles off, that it pads them away)."""
    text = (f"The machine code: {m['instructions']:,} instructions, {m['ffma_share']:.0%} of them multiply-adds "
            f"(FFMA), {m['branches']:,} branches.")
    if m["branches"] > 50 and m["ffma_share"] < 0.5:
        text += (" Branches by the hundred in an unrolled kernel are bounds tests: where a tile does not divide the "
                 "shape, its multiply-adds run under them and operands cannot stay in registers across them; tiles "
                 "that divide the shape leave a handful (the README's conv1d at 255347x980: 274 branches and 34% "
                 "multiply-adds, 4 and 70% with dividing tiles).")
        if getattr(knobs, "pad_tiles", True) is False:
            text += (" pad_tiles=true pads the tiles to whole ones instead: zeros are read beyond the edges and only "
                     "the copies and the write-back test bounds (there: 4 branches, 57% multiply-adds).")
    return text


def machine_tile(op: str, knobs, shape: dict | None = None):
    """(shape, knobs, Trace) of the drawable tile as the compiled SASS executes it (CUDA): the kernel itself
    where its shape is small enough to draw (so what nvcc does to exactly these knobs, spills included, is
    what plays), else the knobs scaled down to the tile."""
    if shape is not None and int(np.prod(OPS[op].output_shape(shape))) <= traffic.TILE_LIMIT:
        s, k = dict(shape), knobs
    else:
        s, k = traffic.tiny(op, knobs, "cuda")
    return s, k, _machine_trace(op, tuple(s.items()), k)


@st.cache_resource(max_entries=128, show_spinner=False)
def _machine_trace(op: str, shape_items: tuple, tiny_knobs):
    from kernels.sass.trace import machine_trace
    return machine_trace(op, dict(shape_items), tiny_knobs)


def machine_figure(op: str, knobs, shape: dict, block: int | None, thread: int | None):
    s, k, _ = machine_tile(op, knobs, shape)
    return _machine_figure(op, tuple(s.items()), k, block, thread)


@st.cache_resource(max_entries=64, show_spinner=False)
def _machine_figure(op: str, shape_items: tuple, tiny_knobs, block: int | None, thread: int | None):
    return viz.tile_animation(_machine_trace(op, shape_items, tiny_knobs), thread=thread, block=block,
                              words=words("cuda"))


class Pending(Exception):
    """Full-size counts still being computed in the background."""


@dataclass(frozen=True)
class FpgaCounts(Counts):
    """The fpga simulator's per-level counts (fpga.levels) with what the same simulated run says about time
    (fpga.time_breakdown) and the report itself (fpga.simulate(...).as_dict()): one simulation gives all three."""
    timing: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)


def count(op: str, shape: dict, knobs, target: str, machine: bool = False):
    """Full-size counts: the TensorIR's (traffic.counts), with `machine` the emulated SASS's too (CUDA), or on
    fpga the accelerator simulator's."""
    if target == "fpga":
        c = fpga.levels(op, shape, knobs)
        timing, report = fpga.time_breakdown(op, shape, knobs), fpga.simulate(op, shape, knobs).as_dict()
        return FpgaCounts(**{f.name: getattr(c, f.name) for f in fields(c)}, timing=timing, report=report)
    key = (op, tuple(shape.items()), knobs, target, machine)
    return traffic.counts(op, shape, knobs, target, machine=machine, limit_s=MACHINE_LIMIT_S,
                          progress=lambda f: PROGRESS.__setitem__(key, f))


# The machine's count a page starts on the one background worker: an emulation estimated past this is not started
# (the Walkthrough's step 1 at 4096^3: about 11 minutes estimated; every other count waits behind a running one).
MACHINE_LIMIT_S = 600.0


# Full-size counts usually take milliseconds, but some large shapes take minutes; they run on one
# background worker, so the page waits at most its budget and shows the rest when they are ready.
# A daemon thread (not a ThreadPoolExecutor, whose workers are joined at exit) so that stopping the
# server never waits for a long count.
_QUEUE: queue.Queue = queue.Queue()
_JOBS: dict[tuple, Future] = {}
_JOBS_LOCK = threading.Lock()
PROGRESS: dict = {}                 # job key -> fraction of the machine's emulation done


def _worker() -> None:
    while True:
        job, args = _QUEUE.get()
        if job.set_running_or_notify_cancel():
            try:
                job.set_result(count(*args))
            except BaseException as e:      # noqa: BLE001 - handed to whoever asks for the result
                job.set_exception(e)


threading.Thread(target=_worker, daemon=True, name="full-counts").start()


def full_counts(op: str, shape_items: tuple, knobs, target: str, wait: float = 1.0, machine: bool = False):
    """Counts at full size, or raises Pending after `wait` seconds (the job keeps running; ask again)."""
    key = (op, shape_items, knobs, target, machine)
    with _JOBS_LOCK:
        job = _JOBS.get(key)
        if job is None or job.cancelled():
            job = _JOBS[key] = Future()
            _QUEUE.put((job, (op, dict(shape_items), knobs, target, machine)))
    try:
        return job.result(timeout=max(wait, 0.0))
    except FutureTimeout:
        raise Pending("still being counted in the background (large shapes can take a while); "
                      "they appear here when ready") from None


def counting(keys: set) -> bool:
    """Whether any of these counts is still queued or running; drops queued jobs nobody asks for any more."""
    with _JOBS_LOCK:
        for k, job in _JOBS.items():
            if k not in keys and not job.running():
                job.cancel()
        return any(not _JOBS[k].done() for k in keys if k in _JOBS)


def tile_figure(op: str, knobs, target: str, block: int | None, thread: int | None):
    s, k, _ = tile_trace(op, knobs, target)
    return _figure(op, tuple(s.items()), k, target, block, thread)


@st.cache_resource(max_entries=64, show_spinner=False)
def _figure(op: str, shape_items: tuple, tiny_knobs, target: str, block: int | None, thread: int | None):
    return viz.tile_animation(_trace(op, shape_items, tiny_knobs, target), thread=thread, block=block,
                              words=words(target))


@st.cache_data(max_entries=256, show_spinner=False)
def code(op: str, shape_items: tuple, knobs, target: str, ir: str) -> str:
    return build.source(op, dict(shape_items), knobs, target, ir)


@st.cache_data(max_entries=256, show_spinner=False)
def snippet(op: str, shape_items: tuple, knobs, target: str) -> tuple[str, list[str]]:
    """The schedule as copyable s_tir primitives, and the one-line reason for each step."""
    from kernels.schedules import create
    sch, steps = create(op, dict(shape_items), knobs, target)
    py = sch.trace.as_python()
    text = "\n".join(py) if isinstance(py, (list, tuple)) else str(py)
    return text, list(steps.lines)


# ---------------------------------------------------------------- compile & run
@st.cache_resource(max_entries=128, show_spinner=False)
def run(op: str, shape_items: tuple, knobs, target: str, _preset: str = ""):
    """Compile, verify, time (serialized per device inside build.run) and record the run; cached by
    (op, shape, knobs, target) only, so a second visitor asking for the same kernel reuses the measurement."""
    r = build.run(op, dict(shape_items), knobs, target)
    try:
        results.record(r, preset=_preset, source="app")
    except Exception:               # noqa: BLE001 - a read-only store must not hide the measurement
        pass
    return r


@st.cache_data(ttl=3, show_spinner=False)
def tracker_servers(host: str, port: int) -> list[dict]:
    """The tracker's servers per key (free, total, pending), asked at most every 3 s."""
    from kernels import remote
    return [{"key": s.key, "free": s.free, "total": s.total, "pending": s.pending} for s in remote.servers(host, port)]


@st.cache_resource(max_entries=64, show_spinner=False)
def run_remote(op: str, shape_items: tuple, knobs, target: str, pool: str):
    """remote.run on a server of the pool, recorded with source rpc:KEY; cached per pool like local runs."""
    from kernels import remote
    r = remote.run(op, dict(shape_items), knobs, target, pool)
    try:
        results.record(r, preset="", source=f"rpc:{pool.rsplit(':', 1)[1]}")
    except Exception:               # noqa: BLE001 - a read-only store must not hide the measurement
        pass
    return r


def recorded_ms(op: str, shape_items: tuple, knobs, target: str) -> float | None:
    """The median of the newest verified run of exactly this kernel on this device in the results store."""
    try:
        df = results.load()
    except Exception:               # noqa: BLE001 - an unreadable store is an empty one
        return None
    if df.empty:
        return None
    mine = df[(df["op"] == op) & (df["target"] == target) & (df["device"] == build.device_name(target))
              & (df["shape"] == json.dumps(dict(shape_items))) & (df["knobs"] == K.knobs_text(knobs)) & df["ok"]]
    return float(mine["median_ms"].iloc[-1]) if not mine.empty else None


# The comparisons of Compile & run (baseline, naive) time in the background, one at a time, after the current
# kernel's own result is shown: the page stays usable and they arrive as they finish.
_CMP: dict[tuple, Future] = {}
_CMP_QUEUE: queue.Queue = queue.Queue()


def _cmp_worker() -> None:
    while True:
        job, args = _CMP_QUEUE.get()
        if job.set_running_or_notify_cancel():
            try:
                job.set_result(run(*args).median_ms)
            except BaseException as e:      # noqa: BLE001 - shown as a sentence where the value would be
                job.set_exception(e)


threading.Thread(target=_cmp_worker, daemon=True, name="comparisons").start()


def comparison(op: str, shape_items: tuple, knobs, target: str, preset: str) -> Future:
    """The median ms of a comparison kernel: from the results store when this device measured it already,
    else timed in the background."""
    key = (op, shape_items, knobs, target)
    with _JOBS_LOCK:
        job = _CMP.get(key)
        if job is None:
            job = _CMP[key] = Future()
            ms = recorded_ms(op, shape_items, knobs, target)
            if ms is not None:
                job.set_running_or_notify_cancel()
                job.set_result(ms)
            else:
                _CMP_QUEUE.put((job, (op, shape_items, knobs, target, preset)))
    return job


# The Tune panel's searches: one background thread each, their progress read by the page as it polls.
TUNES: dict[tuple, dict] = {}


def start_tune(op: str, shape_items: tuple, target: str, trials: int) -> dict:
    """Start (or return) the search for (op, shape, target, trials); its dict fills as trials land."""
    from kernels import tune
    key = (op, shape_items, target, trials)
    with _JOBS_LOCK:
        if key in TUNES and TUNES[key].get("error") is None:
            return TUNES[key]
        job = TUNES[key] = {"history": [], "done": False, "result": None, "error": None}

    def progress(_f, history):
        job["history"] = list(history)

    def work():
        try:
            job["result"] = tune.tune(op, dict(shape_items), target, trials, progress=progress)
        except Exception as e:      # noqa: BLE001 - shown as its sentence in the panel
            job["error"] = " ".join(sentences(e))
        job["done"] = True
    threading.Thread(target=work, daemon=True, name="tune").start()
    return job


# ---------------------------------------------------------------- roofline ceilings and recorded runs
@st.cache_resource(show_spinner=False)
def cpu_ceilings() -> tuple[tuple[str, float], tuple[str, float]]:
    """This machine's FP32 compute and memory bandwidth (numpy matmul and copy), measured once per
    process when the first roofline is drawn (about 0.2 s; the roofline is the last thing on the page)."""
    a = np.ones(16 << 20, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)
    t0 = time.perf_counter()
    for _ in range(3):
        np.copyto(b, a)
    bw = 2 * a.nbytes * 3 / (time.perf_counter() - t0) / 1e9
    x = np.ones((1024, 1024), np.float32)
    x @ x
    t0 = time.perf_counter()
    for _ in range(2):
        x @ x
    gf = 2 * 2 * 1024 ** 3 / (time.perf_counter() - t0) / 1e9
    return ((f"{gf:,.0f} GFLOP/s FP32 (measured here: numpy matmul)", gf),
            (f"{bw:,.0f} GB/s DRAM (measured here: numpy copy)", bw))


def ceilings(target: str) -> tuple[tuple[str, float], tuple[str, float]]:
    """(compute, bandwidth) ceilings as (label, value): measured here on the CPU; on CUDA the H200's
    measured ones when data/ holds them (bench/plans/h200_ceilings.toml), else the datasheet's; on fpga the modelled
    accelerator's peaks (its description, not a measurement)."""
    if target == "cpu":
        return cpu_ceilings()
    if target == "fpga":
        return fpga_ceilings()
    got = gpu_ceilings()
    if got:
        return got
    return H200_DATASHEET["compute"], H200_DATASHEET["memory"]


def fpga_ceilings(accel=None) -> tuple[tuple[str, float], tuple[str, float]]:
    """The modelled accelerator's peaks: GEMM-core MACs per cycle x 2 x clock, DRAM bytes per cycle x clock."""
    a = accel or fpga.DEFAULT
    gf = 2 * a.macs_per_cycle * a.clock_mhz / 1e3
    gb = a.dram_bytes_per_cycle * a.clock_mhz / 1e3
    return ((f"{gf:g} GFLOP/s GEMM core ({a.macs_per_cycle} MACs/cycle at {a.clock_mhz:g} MHz; the modelled "
             "accelerator's peak, not measured)", gf),
            (f"{gb:g} GB/s DRAM ({a.dram_bytes_per_cycle} B/cycle at {a.clock_mhz:g} MHz; modelled, not measured)",
             gb))


@st.cache_data(ttl=60, show_spinner=False)
def gpu_ceilings():
    for path in sorted(glob.glob(os.path.join(DATA_DIR, "**", "*.json"), recursive=True)):
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and {"copy_gbps", "sgemm_gflops"} <= set(doc):
            where = f"measured on {doc.get('device', 'the GPU')}, {str(doc.get('date', ''))[:10]}"
            return ((f"{doc['sgemm_gflops']:,.0f} GFLOP/s FP32 cuBLAS ({where})", float(doc["sgemm_gflops"])),
                    (f"{doc['copy_gbps']:,.0f} GB/s copy ({where})", float(doc["copy_gbps"])))
    return None


@st.cache_data(ttl=60, show_spinner=False)
def recorded_runs(op: str) -> pd.DataFrame:
    """GPU runs shipped under data/ (bench/h200.py table.json files, or CSVs with op and median_ms
    columns), one row per (device, date, shape, preset), for `op`."""
    rows = []
    for path, doc in bench_tables(DATA_DIR):
        for row in doc["rows"]:
            ref = row.get("reference") or {}
            for name, r in (row.get("runs") or {}).items():
                if row.get("op") == op and isinstance(r, dict) and "median_ms" in r:
                    rows.append({"device": doc.get("device", "?"), "date": doc.get("date", "?"),
                                 "shape": shape_text(row.get("shape", {})), "preset": name, **r,
                                 "reference": ref.get("name"), "ref_ms": ref.get("median_ms"),
                                 "file": os.path.relpath(path, DATA_DIR)})
    for path in sorted(glob.glob(os.path.join(DATA_DIR, "**", "*.csv"), recursive=True)):
        try:
            df = pd.read_csv(path)
        except (OSError, ValueError):
            continue
        if {"op", "median_ms"} <= set(df.columns):
            df = df[df["op"] == op].assign(file=os.path.relpath(path, DATA_DIR))
            if "target" in df.columns:
                df = df[df["target"] == "cuda"]
            rows += df.to_dict("records")
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    if "shape" in df.columns:
        df["shape"] = df["shape"].map(lambda s: shape_text(json.loads(s)) if isinstance(s, str) and s.startswith("{")
                                      else s)
    return df


def global_per_output(trace, block: int = 0, thread: int = 0) -> float:
    """Global reads of the inputs by one thread, per output element it writes: the seed's per-pass
    comparison ("naive 16, shared 2, local 1") for the first thread of the drawable tile."""
    mine = [r for r in trace.records if r.block == block and r.thread == thread]
    outs = {r.index for r in mine if r.kind == "write" and r.tensor == trace.output}
    reads = sum(r.kind == "read" and r.level == "global" and r.tensor in trace.inputs for r in mine)
    return reads / max(len(outs), 1)


def passes(trace, block: int = 0, thread: int = 0) -> int:
    """Reduction steps behind one output: reads of the first input per output element by one thread."""
    mine = [r for r in trace.records if r.block == block and r.thread == thread]
    outs = {r.index for r in mine if r.kind == "write" and r.tensor == trace.output}
    return round(sum(r.kind == "read" and r.tensor == trace.inputs[0] for r in mine) / max(len(outs), 1))


def field_for(sentence: str, names: list[str]) -> str | None:
    """The knob a validation sentence is about (the first `name=` it mentions)."""
    hits = [(m.start(), n) for n in names for m in [re.search(rf"\b{re.escape(n)}=", sentence)] if m]
    return min(hits)[1] if hits else None
