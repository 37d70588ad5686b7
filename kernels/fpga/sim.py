"""The behavioural simulator of the fpga target: runs the lowered TensorIR, instruction by instruction.

The lowered PrimFunc is the one every target walks (lowering.passes()). kernels/_interp.py turns it into
Python; here each `pragma_fpga_*` loop nest in it becomes one call that executes the whole instruction with
numpy (_nest.py), so the Python loops left are the tile loops. Buffers hold float32, as the accelerator's
do, and the result is checked against the float64 reference like every other target's. Every instruction
reports the distinct elements it read and wrote per buffer; those give the bytes moved per buffer and level,
the GEMM-core operations and, with the dependencies between instructions, the cycle count of pipeline.py.
Time = cycles / clock: simulated, never measured.
"""
from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass

import numpy as np

from .. import _interp, lowering
from ..knobs import KnobError, fit, knobs_text, validate
from ..ops import OPS, Shape, rel_error
from ..records import Access, Counts, Trace
from ..schedules import create
from ._nest import Nest
from .accel import ACC, BUFFER_NAMES, DEFAULT, FLOAT, INP, LEVEL_NAMES, LEVEL_OF_SCOPE, WGT, Accel
from .pipeline import Op, Timing, timing

TARGET = "fpga"
DEVICE = "VTA-style accelerator (simulated: cycle model at 100 MHz, no hardware)"
QUEUE = {"load": "load", "reset": "compute", "gemm": "compute", "store": "store"}
TRACE_LIMIT = 200_000        # element accesses a drawable trace may record
INSTRUCTION_LIMIT = 300_000  # instructions one simulation may run (about 100 us of Python each)


class _Program(_interp.Program):
    """The interpreter's Python for the tile loops; each pragma_fpga_* nest becomes `_nest(id, _L, (..))`."""

    def __init__(self, func, block: tuple[int, int]):
        self.nests: list[Nest] = []
        self._block = block
        super().__init__(func)

    def _walk_host(self, s):
        if _is_instruction(s):
            self._stmt(s, 1, self._host)
        else:
            super()._walk_host(s)

    def _stmt(self, s, ind: int, out: list[str]):
        if not _is_instruction(s):
            return super()._stmt(s, ind, out)
        nest = Nest(s, self.buf, lambda v: self.names(v, v.name), self._block)
        self.nests.append(nest)
        args = "".join(f"{n}, " for n in nest.outer_names)
        out.append(f"{'    ' * ind}_nest({len(self.nests) - 1}, _L, ({args}))")


def _is_instruction(s) -> bool:
    return type(s).__name__ == "AttrStmt" and str(s.attr_key).startswith("pragma_fpga_")


# ---------------------------------------------------------------- running
@dataclass(frozen=True)
class Instr:
    """One executed instruction, as the counts and the cycle model need it."""
    kind: str
    access: tuple                    # ((buffer id, reads, writes, lo, hi), ...)
    core_ops: int
    dram_bytes: int
    acc_writes: int


@dataclass(frozen=True)
class Report:
    """Everything one simulated run says. Times are simulated: cycles of the pipeline model / clock."""
    op: str
    shape: dict
    knobs: str
    accel: Accel
    rel_err: float
    ok: bool
    timing: Timing
    core_ops: int
    macs: int                                # multiply-accumulates the operator needs (MACs = FLOPs / 2)
    instructions: dict                       # kind -> how many
    per_buffer: dict                         # buffer name -> {"read": bytes, "write": bytes}
    per_tensor: dict                         # tensor -> level -> {"read": elements, "write": elements}
    peak: dict                               # buffer name -> (floats addressed, allocated by TVM, capacity)

    @property
    def simulated(self) -> bool:
        return True

    def as_dict(self) -> dict:
        return {"op": self.op, "shape": self.shape, "target": TARGET, "device": DEVICE, "simulated": True,
                "knobs": self.knobs, "accelerator": self.accel.describe(), "rel_err": self.rel_err, "ok": self.ok,
                "cycles": self.timing.as_dict(), "core_ops": self.core_ops, "macs": self.macs,
                "core_utilisation": self.macs / max(self.core_ops * self.accel.macs_per_cycle, 1),
                "instructions": self.instructions, "bytes_per_buffer": self.per_buffer,
                "per_tensor": self.per_tensor, "levels": LEVEL_NAMES,
                "buffer_floats": {k: {"used": u, "allocated_by_tvm": a, "capacity": c}
                                  for k, (u, a, c) in self.peak.items()}}


@functools.lru_cache(maxsize=64)
def _lowered(op: str, shape_items: tuple, knobs):
    sch, _ = create(op, dict(shape_items), knobs, TARGET)
    return lowering.lower(sch.mod, TARGET)["main"]


@functools.lru_cache(maxsize=64)
def _program(op: str, shape_items: tuple, knobs) -> _Program:
    return _Program(_lowered(op, shape_items, knobs), (DEFAULT.block_out, DEFAULT.block_in))


def _check(op: str, shape: Shape, knobs) -> None:
    if (op, TARGET) not in _knob_classes():
        raise KnobError([f"The fpga target maps gemm and conv1d onto its GEMM core; {op} has no mapping "
                         "(depthwise convolution has no channel reduction to fill the core's 16 lanes)."])
    problems = validate(op, TARGET, knobs, shape)
    if problems:
        raise KnobError(problems)
    steps = int(np.prod([n for _, n in knobs.layout(shape).counts]))
    if 3 * steps > INSTRUCTION_LIMIT:
        raise KnobError([f"The simulator would run about {3 * steps:,} accelerator instructions for this shape "
                         f"and these tiles (about {3 * steps // 10_000:,} s of Python); it stops at "
                         f"{INSTRUCTION_LIMIT:,}: use larger tiles or a smaller shape."])


def _knob_classes():
    from ..knobs import KNOBS
    return {k for k in KNOBS if k[1] == TARGET}


def allocated(prog) -> dict[str, int]:
    """Floats the lowered kernel allocates in each on-chip buffer (double-buffer slots included)."""
    out = dict.fromkeys((INP, WGT, ACC), 0)
    for b in prog.bufs:
        if b.scope in out:
            out[b.scope] += b.size
    return out


def used(done_log, prog) -> dict[str, int]:
    """Floats of each on-chip buffer the run actually addressed (the union of every instruction's range)."""
    scope = {b.id: b.scope for b in prog.bufs}
    marks = {b.id: np.zeros(b.size, bool) for b in prog.bufs if b.scope in (INP, WGT, ACC)}
    for d in done_log:
        for bid, a in d.access.items():
            if bid in marks and a.hi >= a.lo:
                marks[bid][a.lo:a.hi + 1] = True
    out = dict.fromkeys((INP, WGT, ACC), 0)
    for bid, m in marks.items():
        out[scope[bid]] += int(m.sum())
    return out


def _fits(done_log, prog) -> None:
    """Every on-chip buffer holds what the run addressed. (The knob rules check the tiles before any run;
    TVM 0.27 sometimes allocates the conv1d window larger than the elements it then uses, its compaction of
    the i + k index being loose: the unused rest is not charged.)"""
    for scope, n in used(done_log, prog).items():
        cap = DEFAULT.capacity(scope)
        if n > cap:
            raise KnobError([f"The lowered kernel addresses {n:,} floats of the {BUFFER_NAMES[scope]}, "
                             f"{(n - cap) * FLOAT / 1024:.1f} KiB over its {cap * FLOAT // 1024} KiB; "
                             "lower the tiles."])


def execute(op: str, shape: Shape, knobs, seed: int = 0, keep: bool = False):
    """Run the lowered kernel on fresh inputs: (inputs, output, executed instructions, program, kept log)."""
    _check(op, shape, knobs)
    prog = _program(op, tuple(shape.items()), knobs)
    o = OPS[op]
    xs = o.random_inputs(shape, np.random.default_rng(seed))
    names = list(o.inputs) + [o.output]
    G = {}
    for b in prog.bufs:
        if b.scope == "global":
            G[b.id] = (xs[names.index(b.name)].ravel().copy() if b.name in names[:-1]
                       else np.full(b.size, np.nan, np.float32))
    done_log: list = []

    def array_of(info):
        return G[info.id] if info.scope == "global" else L[info.id]

    def _nest(i, loc, vals):
        nonlocal L
        L = loc
        done_log.append(prog.nests[i].run(vals, array_of, keep))

    def _outside(*_):
        raise RuntimeError("fpga: the lowered kernel touches a buffer outside any accelerator instruction")

    L: dict = {}
    env = {"np": np, "_ld": _outside, "_st": _outside, "_G": G, "_ramp": _interp._ramp, "_bcast": _interp._bcast,
           "_tdiv": _interp._tdiv, "_tmod": _interp._tmod, "_shared": _alloc, "_nest": _nest,
           "_int": lambda x: np.asarray(x).astype(np.int64) if isinstance(x, np.ndarray) else int(x),
           "_float": float, "_bool": bool}
    exec(compile("\n".join(prog.src), "<lowered TensorIR, fpga>", "exec"), env)
    for name, _, _ in prog.kernels:
        for _ in env[name](0, 0, {}):
            pass
    _fits(done_log, prog)
    out_id = next(b.id for b in prog.bufs if b.scope == "global" and b.name == o.output)
    return xs, G[out_id].reshape(o.output_shape(shape)), done_log, prog


def _alloc(store: dict, bid: int, size: int) -> np.ndarray:
    """An on-chip buffer: float32 like the accelerator's, NaN until the DMA fills it (reading an element no
    instruction wrote poisons the result)."""
    if bid not in store:
        store[bid] = np.full(size, np.nan, np.float32)
    return store[bid]


def _instrs(done_log, prog) -> list[Instr]:
    scope = {b.id: b.scope for b in prog.bufs}
    out = []
    for d in done_log:
        dram = sum((a.reads if d.kind == "load" else a.writes) for bid, a in d.access.items()
                   if scope[bid] == "global")
        acc_w = sum(a.writes for bid, a in d.access.items() if scope[bid] == ACC)
        out.append(Instr(d.kind, tuple(sorted((bid, a.reads, a.writes, a.lo, a.hi) for bid, a in d.access.items())),
                         d.core_ops, dram * FLOAT, acc_w))
    return out


def _ops(instrs: list[Instr], prog, accel: Accel) -> list[Op]:
    """Instructions -> pipeline ops, with dependencies from the on-chip address ranges they touch: an
    instruction waits for the last earlier writer of any element in the ranges it reads or writes, and for
    the last earlier reader in each queue of the range it writes."""
    chip = {b.id for b in prog.bufs if b.scope in (INP, WGT, ACC)}
    writer = {b: _Spans() for b in chip}
    reader = {(b, q): _Spans() for b in chip for q in ("load", "compute", "store")}
    ops = []
    for i, ins in enumerate(instrs):
        q = QUEUE[ins.kind]
        deps: set[int] = set()
        touched = [(bid, r, w, lo, hi) for bid, r, w, lo, hi in ins.access if bid in chip and hi >= lo]
        for bid, r, w, lo, hi in touched:
            deps |= writer[bid].over(lo, hi)
            if w:
                for qq in ("load", "compute", "store"):
                    deps |= reader[(bid, qq)].over(lo, hi)
        for bid, r, w, lo, hi in touched:
            if w:
                writer[bid].set(lo, hi, i)
            if r:
                reader[(bid, q)].set(lo, hi, i)
        deps.discard(i)
        if ins.kind in ("load", "store"):
            cycles = max(1, -(-ins.dram_bytes // accel.dram_bytes_per_cycle))
        elif ins.kind == "reset":
            cycles = max(1, -(-ins.acc_writes // accel.block_out))
        else:
            cycles = ins.core_ops
        ops.append(Op(q, cycles, tuple(sorted(deps)), ins.kind))
    return ops


class _Spans:
    """Which instruction last touched each element of a buffer, kept as disjoint [lo, hi] ranges."""

    def __init__(self):
        self.spans: list[tuple[int, int, int]] = []

    def over(self, lo: int, hi: int) -> set[int]:
        return {i for a, b, i in self.spans if a <= hi and b >= lo}

    def set(self, lo: int, hi: int, who: int) -> None:
        keep = []
        for a, b, i in self.spans:
            if b < lo or a > hi:
                keep.append((a, b, i))
                continue
            if a < lo:
                keep.append((a, lo - 1, i))
            if b > hi:
                keep.append((hi + 1, b, i))
        keep.append((lo, hi, who))
        self.spans = sorted(keep)


@functools.lru_cache(maxsize=32)
def _simulate(op: str, shape_items: tuple, knobs, accel: Accel, seed: int) -> Report:
    shape = dict(shape_items)
    xs, out, done_log, prog = execute(op, shape, knobs, seed)
    rel = rel_error(out, OPS[op].reference(*xs))
    instrs = _instrs(done_log, prog)
    ops = _ops(instrs, prog, accel)
    macs = OPS[op].flops(shape) // 2
    dram = sum(i.dram_bytes for i in instrs)
    t = timing(ops, macs, dram, accel.macs_per_cycle, accel.dram_bytes_per_cycle, accel.clock_mhz)
    kinds = {k: sum(1 for i in instrs if i.kind == k) for k in ("load", "reset", "gemm", "store")}
    per_buffer, per_tensor, peak = _traffic(instrs, prog, accel, used(done_log, prog))
    from ..build import TOLERANCE
    return Report(op=op, shape=shape, knobs=knobs_text(knobs), accel=accel, rel_err=rel, ok=bool(rel < TOLERANCE),
                  timing=t, core_ops=sum(i.core_ops for i in instrs), macs=macs, instructions=kinds,
                  per_buffer=per_buffer, per_tensor=per_tensor, peak=peak)


def _traffic(instrs, prog, accel: Accel, in_use: dict):
    info = {b.id: b for b in prog.bufs}
    per_buffer = {BUFFER_NAMES[s]: {"read": 0, "write": 0} for s in ("global", INP, WGT, ACC)}
    per_tensor: dict = {}
    for ins in instrs:
        for bid, r, w, lo_, hi_ in ins.access:
            b = info[bid]
            name = BUFFER_NAMES.get(b.scope, b.scope)
            per_buffer[name]["read"] += r * FLOAT
            per_buffer[name]["write"] += w * FLOAT
            lv = per_tensor.setdefault(tensor_of(b.name), {}).setdefault(LEVEL_OF_SCOPE.get(b.scope, "global"),
                                                                        {"read": 0, "write": 0})
            lv["read"] += r
            lv["write"] += w
    alloc = allocated(prog)
    peak = {BUFFER_NAMES[s]: (in_use[s], alloc[s], accel.capacity(s)) for s in (INP, WGT, ACC)}
    return per_buffer, per_tensor, peak


def tensor_of(buffer_name: str) -> str:
    """A_local.inp_buffer / A_pad_local_inp_buffer -> A or A_pad; a parameter's view (A_1) -> A."""
    base = buffer_name.split("_local")[0]
    return base[:-2] if base.endswith("_1") and base[:-2] else base


# ---------------------------------------------------------------- the public calls
def simulate(op: str, shape: Shape, knobs, accel: Accel = DEFAULT, seed: int = 0) -> Report:
    """Run the fpga kernel in the simulator: result checked against float64, counts, simulated cycles.
    Raises KnobError (sentences) for an operator without a mapping or knobs that do not fit."""
    return _simulate(op, tuple(shape.items()), knobs, accel, seed)


def levels(op: str, shape: Shape, knobs, accel: Accel = DEFAULT) -> Counts:
    """Per-level element counts in records.Counts form (levels global/shared/register, whose names on this
    target are LEVEL_NAMES: DRAM / on-chip buffer / GEMM-core registers), for the Lab's level charts."""
    r = simulate(op, shape, knobs, accel)
    return Counts(per_tensor=r.per_tensor,
                  instructions={**{f"{k}_instructions": v for k, v in r.instructions.items()}, "core_ops": r.core_ops},
                  ncu={}, differences=(f"simulated on the {accel.name}: levels are {', '.join(LEVEL_NAMES.values())}",
                                   "a GEMM-core operation reads each operand element once per operation"),
                  flops=OPS[op].flops(shape), min_bytes=OPS[op].min_bytes(shape), blocks=1, threads=1,
                  method="fpga simulator: the lowered TensorIR executed instruction by instruction")


def time_breakdown(op: str, shape: Shape, knobs, accel: Accel = DEFAULT) -> dict:
    """Simulated time and where it goes: per-queue busy cycles, the overlap the pipeline hid, the bounds."""
    r = simulate(op, shape, knobs, accel)
    t = r.timing
    ms = 1 / (accel.clock_mhz * 1e3)
    return {"simulated": True, "clock_mhz": accel.clock_mhz, "cycles": t.cycles, "ms": t.ms,
            "load_ms": t.load_cycles * ms, "compute_ms": t.compute_cycles * ms, "store_ms": t.store_cycles * ms,
            "overlap_ms": t.overlap_cycles * ms, "serial_ms": t.serial_ms,
            "compute_bound_ms": t.compute_bound * ms, "memory_bound_ms": t.memory_bound * ms,
            "fill_ms": t.fill_cycles * ms, "bound": "memory" if t.memory_bound >= t.compute_bound else "compute"}


def lowered_source(op: str, shape: Shape, knobs) -> str:
    """The lowered TensorIR the simulator executes (the accelerator's 'device code')."""
    _check(op, shape, knobs)
    return _lowered(op, tuple(shape.items()), knobs).script()


def run_result(op: str, shape: Shape, knobs, accel: Accel = DEFAULT):
    """A build.Result for the fpga target: median_ms is the simulated time (one deterministic 'repeat')."""
    from ..build import TOLERANCE, Result, versions
    r = simulate(op, shape, knobs, accel)             # counts and cycles do not depend on the data
    rel, _, _ = verify(op, shape, knobs)                # the error on fresh random inputs, as on every target
    ms = r.timing.ms
    return Result(op=op, shape=dict(shape), target=TARGET, device=DEVICE, knobs=r.knobs, median_ms=ms,
                  spread_ms=0.0, repeats=1, gflops=OPS[op].flops(shape) / ms / 1e6,
                  gbps=OPS[op].min_bytes(shape) / ms / 1e6, rel_err=rel, ok=bool(rel < TOLERANCE),
                  ref="simulated: cycles / clock, no hardware", ref_ms=None, vs_ref=None, compile_s=0.0,
                  date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), versions=versions())


TINY = {"gemm": {"M": 4, "N": 32, "K": 32}, "conv1d": {"M": 48, "N": 32}}


def tiny(op: str, knobs) -> tuple[Shape, object]:
    """A drawable shape (two core blocks along each blocked axis) and the knobs scaled to it in proportion
    to the speed-test size, as traffic.tiny does for the other targets: resident and double_buffer carry over."""
    from dataclasses import fields, replace
    s, big = TINY[op], OPS[op].sizes["speed test"]
    ext_s, ext_b = knobs.extents(s), knobs.extents(big)
    ch = {}
    for f in fields(knobs):
        if not f.name.startswith("tile"):
            continue
        x = f.name[5:] if f.name != "tile" else ""
        step = f.metadata.get("lo", 1)
        v = getattr(knobs, f.name) * ext_s[x][1] / ext_b[x][1]
        ch[f.name] = max(step, int(round(v / step)) * step)
    return s, fit(replace(knobs, **ch), s)


def trace(op: str, shape: Shape, knobs, seed: int = 0) -> Trace:
    """Every element access of a small run, in records.Access form: level global = DRAM, shared = the input
    and weight buffers, register = the accumulator; phase = the instruction's position in the program."""
    _check(op, shape, knobs)
    _, _, done_log, prog = execute(op, shape, knobs, seed, keep=True)
    from ..traffic import tensor_shapes
    shapes = tensor_shapes(op, shape)
    recs: list[Access] = []
    for step, d in enumerate(done_log):
        for bid, a in d.access.items():
            b = prog.bufs[bid]
            t = tensor_of(b.name)
            tshape = shapes.get(t) if b.scope == "global" else None
            for kind, lst in (("read", a.read_idx), ("write", a.write_idx)):
                for idx, _ops in lst:
                    for flat in idx.tolist():
                        index = tuple(int(x) for x in np.unravel_index(flat, tshape)) if tshape else (flat,)
                        recs.append(Access(len(recs), step, 0, 0, t, index, LEVEL_OF_SCOPE.get(b.scope, "global"),
                                           kind, b.name))
                        if len(recs) > TRACE_LIMIT:
                            raise KnobError([f"The trace would record over {TRACE_LIMIT:,} accesses; trace a "
                                             "smaller shape (fpga.tiny gives one)."])
    return Trace(op=op, shape=dict(shape), target=TARGET, knobs=knobs_text(knobs), records=tuple(recs),
                 blocks=1, threads=1, tensors=shapes, inputs=OPS[op].inputs, output=OPS[op].output)


def verify(op: str, shape: Shape, knobs, rng=None):
    """build.verify's contract for the fpga target: (rel. error, arrays, inputs), on fresh random inputs."""
    seed = int((rng or np.random.default_rng()).integers(1 << 31))
    xs, out, _, _ = execute(op, shape, knobs, seed)
    rel = rel_error(out, OPS[op].reference(*xs))
    return rel, list(xs) + [out.astype(np.float32)], xs


__all__ = ["simulate", "levels", "time_breakdown", "lowered_source", "run_result", "tiny", "trace", "verify",
           "Report", "DEVICE"]
