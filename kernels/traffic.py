"""Memory traffic from the lowered TensorIR: the tile trace (records to animate) and exact counts.

Both views walk the same lowered PrimFunc that build.py compiles (lowering.passes()). The trace runs it
on a drawable tile with the Python interpreter of _interp.py; counts() (in _count.py) counts it at full
size without running it, and on CUDA adds the machine's view: the compiled SASS, emulated (kernels/sass).
"""
from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import tvm

from . import _interp, lowering
from ._tirpy import level_of, tensor_of
from .knobs import KnobError, fit, knobs_text, validate
from .ops import OPS, Shape, rel_error
from .records import Access, Counts, Trace
from .schedules import create

TILE_LIMIT = 4096          # output elements a drawable tile may have


def tensor_shapes(op: str, shape: Shape) -> dict[str, tuple[int, ...]]:
    """Every tensor of the operator's TE graph (inputs, intermediates such as A_pad or D, output)."""
    out = {}
    stack = [OPS[op].define(shape)[-1]]
    while stack:
        t = stack.pop()
        name = t.op.name
        if name not in out:
            out[name] = tuple(int(d) for d in t.shape)
            stack += list(t.op.input_tensors)
    return out


@functools.lru_cache(maxsize=512)
def _lowered(op: str, shape_items: tuple, knobs, target: str, compact: bool):
    sch, _ = create(op, dict(shape_items), knobs, target)
    passes = lowering.passes(lowering.disabled(target, knobs, dict(shape_items)) +
                             (() if compact else ("tirx.UnrollLoop",)), getattr(knobs, "one_barrier", False))
    if not compact:   # every buffer in its tensor's full index space (a flat index names the element), loops
        # left rolled as the counts see them
        drop = ("CompactBufferAllocation", "StorageRewrite")
        passes = [p for p in passes if not any(d in str(p.info.name) for d in drop)]
    with lowering.tvm_target(target):
        return tvm.ir.transform.Sequential(passes)(sch.mod)["main"]


def lowered(op: str, shape: Shape, knobs, target: str, compact: bool = True):
    return _lowered(op, tuple(shape.items()), knobs, target, compact)


@functools.lru_cache(maxsize=512)
def _for_counting(op: str, shape_items: tuple, knobs, target: str):
    """The lowered PrimFunc with TVM's explicit unrolling (the `unroll` knob's pragma) left folded: the
    same accesses, as loops rather than hundreds of copies, which is also how nvcc sees a loop it unrolls
    itself. The counts and the nvcc model walk this form."""
    sch, _ = create(op, dict(shape_items), knobs, target)
    skip = lowering.disabled(target, knobs, dict(shape_items)) + ("tirx.UnrollLoop",)
    with lowering.tvm_target(target):
        return tvm.ir.transform.Sequential(lowering.passes(skip, getattr(knobs, "one_barrier", False)))(
            sch.mod)["main"]


@functools.lru_cache(maxsize=512)
def _program(op: str, shape_items: tuple, knobs, target: str) -> _interp.Program:
    return _interp.Program(_lowered(op, shape_items, knobs, target, False))


def tiny(op: str, knobs, target: str) -> tuple[Shape, object]:
    """The drawable tile: the operator's 'tile' size with the knobs scaled down so the mechanism stays
    visible. A patch keeps its size where the tiny axis allows (at most a quarter of it); a block keeps up to
    4 threads along each axis, so threads still share what a block stages; a reduction split keeps its share
    of the reduction (at least 2). Cache scopes, order and vector width carry over (vector at most 4)."""
    s = dict(OPS[op].sizes["tile"])
    big = OPS[op].sizes["speed test"]
    k = knobs
    ext_small, ext_big = k.extents(s), k.extents(big)
    ch = {}
    for x, (_, n) in ext_small.items():
        nb = ext_big[x][1]
        t, p = (f"tile_{x}", f"patch_{x}") if x else ("tile", "patch")
        if hasattr(k, t):
            tile_, patch_ = getattr(k, t), getattr(k, p)
            pv = max(1, min(patch_, n // 4 or 1))
            threads = min(max(1, tile_ // patch_), 4)
            tv = max(pv * threads, round(tile_ * n / nb) // pv * pv)
            ch[t], ch[p] = min(tv, max(pv, n // pv * pv)), pv
        sp = f"{x}_split"
        if hasattr(k, sp):
            ch[sp] = max(1, min(n, max(2, round(getattr(k, sp) * n / nb))))
    small = fit(replace(k, **ch), s)
    if hasattr(small, "vector"):
        small = fit(replace(small, vector=min(small.vector, 4)), s)
    problems = validate(op, target, small, s)
    if problems:
        raise KnobError(problems)
    return s, small


def trace(op: str, shape: Shape, knobs, target: str, seed: int = 0) -> Trace:
    """Run the lowered kernel on a small shape and return every access in execution order."""
    out_elems = int(np.prod(OPS[op].output_shape(shape)))
    if out_elems > TILE_LIMIT:
        raise KnobError([f"The shape has {out_elems} outputs; a drawable tile allows at most {TILE_LIMIT}, "
                         "so trace a smaller shape (traffic.tiny gives one)."])
    log, prog, _ = _execute(op, shape, knobs, target, seed)
    shapes = tensor_shapes(op, shape)
    padded = _padded(op, shape, knobs, target)
    views = _views(shapes, padded)
    # an intermediate of the operator's own that its padded definition grows (conv1d's A_pad) keeps its name
    shapes.update({t: s for t, s in padded.items() if t in shapes})
    meta = []
    for b in prog.bufs:
        t = tensor_of(b.name)
        tshape = shapes.get(t)
        if t in views:                            # pad_tiles' zero-padded view: the tensor, grown by the padding
            t, tshape = views[t], padded[t]
        if tshape is None or int(np.prod(tshape)) != b.size:
            tshape = (b.size,)
        table = list(zip(*(a.tolist() for a in np.unravel_index(np.arange(b.size), tshape))))
        meta.append((t, table, level_of(b.scope), b.name))
    recs: list[Access] = []
    block = thread = phase = 0
    for e in log:
        if e[0] == "T":
            _, block, thread, phase = e
            continue
        if e[0] == "B":
            recs.append(Access(len(recs), e[2], e[1], -1, "", (), "shared", "barrier", ""))
            continue
        bid, idx, kind = e
        t, table, level, bname = meta[bid]
        kind_s = "read" if kind == _interp.READ else "write"
        for flat in (idx.tolist() if isinstance(idx, np.ndarray) else (idx,)):
            recs.append(Access(len(recs), phase, block, thread, t, table[flat], level, kind_s, bname))
    blocks = sum(k[1] for k in prog.kernels[:1])
    return Trace(op=op, shape=dict(shape), target=target, knobs=knobs_text(knobs), records=tuple(recs),
                 blocks=blocks, threads=max(k[2] for k in prog.kernels), tensors=shapes,
                 inputs=OPS[op].inputs, output=OPS[op].output)


def _padded(op: str, shape: Shape, knobs, target: str) -> dict[str, tuple[int, ...]]:
    """Shapes of the zero-padded views (A_pad, C_pad) that the pad_tiles knob adds to a CUDA GEMM: views only,
    inlined into the copies from global. (On the CPU the padded operands are arrays of their own, drawn and
    counted as such.)"""
    if target != "cuda" or not getattr(knobs, "pad_tiles", False):
        return {}
    from .schedules import unscheduled
    from .schedules._common import padded_shapes
    plan = knobs.plan(shape)
    return padded_shapes(unscheduled(op, shape, plan), plan)


def _views(shapes: dict, padded: dict) -> dict[str, str]:
    """pad_tiles' zero-padded views -> the tensor each pads (A_pad -> A for GEMM; W_pad -> W, C_pad -> C for
    conv1d, whose own A_pad is an intermediate of its definition, not a view): the trace and the counts name
    their accesses by the tensor."""
    return {t: t[:-4] for t in padded if t not in shapes and t[:-4] in shapes}


def _named_by_tensor(c: Counts, views: dict) -> Counts:
    def merge(d: dict) -> dict:
        out: dict = {}
        for t, lv in d.items():
            into = out.setdefault(views.get(t, t), {})
            for level, rw in lv.items():
                for kind, n in rw.items():
                    into.setdefault(level, {}).setdefault(kind, 0)
                    into[level][kind] += n
        return out
    return replace(c, per_tensor=merge(c.per_tensor),
                   instructions={**c.instructions, "asked": merge(c.instructions["asked"])})


def _execute(op: str, shape: Shape, knobs, target: str, seed: int):
    prog = _program(op, tuple(shape.items()), knobs, target)
    o = OPS[op]
    xs = o.random_inputs(shape, np.random.default_rng(seed))
    names = list(o.inputs) + [o.output]
    inputs = {b.id: xs[names.index(b.name)].astype("float64").ravel().copy()
              for b in prog.bufs if b.scope == "global" and b.name in names[:-1]}
    log, G = _interp.run(prog, inputs)
    out_id = next(b.id for b in prog.bufs if b.scope == "global" and b.name == o.output)
    out = G[out_id].reshape(o.output_shape(shape))
    return log, prog, (xs, out)


def simulate(op: str, shape: Shape, knobs, target: str, seed: int = 0) -> float:
    """rel. error of the interpreted kernel against the float64 reference (checks CUDA schedules on a CPU)."""
    _, _, (xs, out) = _execute(op, shape, knobs, target, seed)
    return rel_error(out, OPS[op].reference(*xs))


def counts(op: str, shape: Shape, knobs, target: str, machine: bool = True, progress=None,
           limit_s: float | None = None) -> Counts:
    """What the schedule asks for at each level (the TensorIR), and on CUDA with `machine` what the compiled
    SASS executes (kernels/sass: the Nsight Compute counts) and why the two differ; with `limit_s`, not where
    emulating it is estimated to take longer than that (sass.estimate)."""
    from ._count import count
    c = count(op, shape, knobs, target, _for_counting(op, tuple(shape.items()), knobs, target))
    views = _views(tensor_shapes(op, shape), _padded(op, shape, knobs, target))
    c = _named_by_tensor(c, views) if views else c
    return with_machine(op, shape, knobs, c, progress, limit_s) if machine and target == "cuda" else c


def with_machine(op: str, shape: Shape, knobs, c: Counts, progress=None, limit_s: float | None = None) -> Counts:
    """c with the machine's view added: the emulated SASS's counts, or the sentence saying why there are none."""
    from . import sass
    from .sass import estimate
    try:
        if limit_s is not None and (est := estimate.estimate_seconds(op, shape, knobs)) > limit_s:
            return replace(c, machine={"error": (
                f"No machine counts for this kernel here: emulating its SASS at this shape is estimated at "
                f"{est / 60:.0f} minutes (each thread's share of the multiply-adds, one warp instruction at a "
                f"time), over the {limit_s / 60:.0f} a page may spend. The counts above are exact; at a smaller "
                f"shape, or with more threads a block, the machine's counts come back.")})
        m = sass.machine_counts(op, shape, knobs, progress)
        why = sass.explain(c.instructions["asked"], m, sass.compiled(op, shape, knobs))
    except (sass.EmulationError, sass.ToolchainError) as e:
        return replace(c, machine={"error": f"No machine counts for this kernel: {e}"})
    return replace(c, ncu=m.ncu, differences=tuple(why),
                   machine={"instructions": m.instructions, "per_tensor": m.per_tensor, "sass_hash": m.sass_hash,
                            "seconds": round(m.seconds, 3), "kernels": list(m.kernels)})
