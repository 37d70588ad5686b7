"""The CPU schedule engine: a Plan (tiles, patches, split, order, stages) -> LLVM-ready TensorIR.

Orders of the output loop nest (bo = block tiles, to = patches in a tile, po = one patch, ro/ri = reduction tiles):
    plain    bo to po ro ri     the loop nest as written: the reduction innermost
    k_outer  bo ro to ri po     cache blocking: one reduction tile of the operands stays in cache
    k_inner  bo to ro ri po     each patch accumulates over the whole reduction in registers
Intermediates (the padding A_pad / X_pad, the depthwise result D) live in one of three places:
    global      their own array, filled before the consumer runs
    inline      recomputed where they are read (the padding becomes a bounds test)
    compute_at  computed per tile inside the consumer's loop nest, so the tile stays in cache
Tiles that do not divide their axis leave a predicate (T.where) on the remainder; the loops carry
`pragma_loop_partition_hint`, so lowering splits off the remainder and the full tiles run without it.
"""
from __future__ import annotations

from math import prod

from tvm.s_tir import Schedule
from tvm.tirx import ForKind, IntImm

from ..knobs import Plan
from ._common import Steps, is_pad, producer, read_index

ORDER = {
    "plain": ("bo", "to", "po", "ro", "ri"),
    "k_outer": ("bo", "ro", "to", "ri", "po"),
    "k_inner": ("bo", "to", "ro", "ri", "po"),
}
MAX_VECTOR_REGS = 32        # zmm/ymm registers: a patch larger than this is not unrolled into registers


def schedule(sch: Schedule, plan: Plan, steps: Steps) -> Schedule:
    blk = sch.get_sblock("C")
    stages = dict(plan.caches)
    for name, where in plan.caches:
        b = producer(sch, name)
        if b is not None and is_pad(name) and where == "inline":
            sch.compute_inline(b)
            steps(f"compute_inline({name}): the zero padding becomes a bounds test in the reader, no extra array.")

    parts = _tile(sch, blk, plan, steps)
    bo = sch.fuse(*parts["bo"]) if len(parts["bo"]) > 1 else parts["bo"][0]
    if plan.parallel:
        sch.parallel(bo)
        steps("parallel over the block tiles: they write disjoint outputs, so the cores share them out.")

    if "D" in stages and producer(sch, "D") is not None:
        _depthwise_stage(sch, plan, stages, parts, bo, steps)
    for name, where in plan.caches:
        b = producer(sch, name)
        if name == "B" and where == "packed":
            pk = sch.cache_read(blk, read_index(sch, blk, "B"), "global")
            sch.compute_at(pk, parts["ro"][-1] if plan.order == "k_outer" else bo)
            _vectorize_inner(sch, sch.get_loops(pk)[-1], plan.vector)
            steps("pack B's K-tile x N-tile panel contiguously once per tile: the inner loop streams unit-stride "
                  "vectors.")
        elif b is not None and is_pad(name) and sch.get_consumers(b) and producer(sch, "D") is None:
            if where == "compute_at":
                _pad_at(sch, b, bo, plan)
                steps(f"compute {name} per tile (compute_at): the tile's padded window stays in L1; a partition "
                      "hint splits its zero border from the plain copy.")
            elif where == "global":
                _materialize(sch, b, plan, steps, name)

    if plan.cache_out == "local" and plan.order != "plain":
        out = sch.cache_write(blk, 0, "local")
        sch.reverse_compute_at(out, parts["to"][-1] if plan.order == "k_inner" else bo)
        _vectorize_inner(sch, sch.get_loops(out)[-1], plan.vector)
        steps(f"accumulate in C_local, one per {'patch' if plan.order == 'k_inner' else 'tile'}, and write each "
              "output once.")
    if plan.order != "plain" and stages.get("D") != "inline":
        _register_patch(sch, parts, plan, steps)
    first_r = next(l for key in ORDER[plan.order] if key in ("ro", "ri") for l in parts[key])
    sch.decompose_reduction(blk, first_r)
    if _has_remainder(sch, blk, plan):
        _partition_hints(sch, bo)
        steps("the tiles do not divide every axis: a partition hint splits off the remainder, so the full tiles "
              "run without bounds tests.")
    if plan.unroll:
        sch.annotate(bo, "pragma_auto_unroll_max_step", plan.unroll)
        steps(f"unroll inner loops up to {plan.unroll} steps.")
    return sch


def _tile(sch: Schedule, blk, plan: Plan, steps: Steps) -> dict[str, list]:
    loops = sch.get_loops(blk)
    ns = len(plan.tiles)
    parts = {"bo": [], "to": [], "po": [], "ro": [], "ri": []}
    for loop, t, p in zip(loops[:ns], plan.tiles, plan.patches):
        b, th, pp = sch.split(loop, [None, t // p, p])
        parts["bo"].append(b), parts["to"].append(th), parts["po"].append(pp)
    for loop, s in zip(loops[ns:], plan.splits):
        o, i = sch.split(loop, [None, s])
        parts["ro"].append(o), parts["ri"].append(i)
    sch.reorder(*[l for key in ORDER[plan.order] for l in parts[key]])
    steps({"plain": "keep the loop nest as written: each output is finished before the next starts.",
           "k_outer": "reduction tile outside the patches, contiguous output innermost: one reduction tile of the "
                      "operands stays in cache.",
           "k_inner": "each patch accumulates over the whole reduction before moving on, contiguous output "
                      "innermost."}[plan.order]
          + (f" Tiles {'x'.join(map(str, plan.tiles))}, patches {'x'.join(map(str, plan.patches))}, "
             f"reduction split {'x'.join(map(str, plan.splits))}." if max(plan.tiles) > 1 else ""))
    return parts


def _depthwise_stage(sch: Schedule, plan: Plan, stages: dict, parts: dict, bo, steps: Steps) -> None:
    """Place D (and the padding it reads) where its mode says; D is a reduction, so 'inline' means per output."""
    d, where = producer(sch, "D"), stages["D"]
    pad = producer(sch, "X_pad")
    if where == "global":
        if pad is not None:
            _materialize(sch, pad, plan, steps, "X_pad")
        _materialize(sch, d, plan, steps, "D")
        return
    if where == "inline":
        sch.compute_at(d, parts["po"][-1])
        steps("D is a reduction, which TIR cannot inline: compute_at the innermost output loop recomputes it for "
              "every output instead.")
        return
    at = parts["ro"][-1] if plan.order == "k_outer" else bo
    sch.compute_at(d, at, preserve_unit_loops=True)
    steps("compute D per tile inside the pointwise loop nest (compute_at): it never round-trips through memory.")
    ivs = sch.get(d).iter_vars
    own = sch.get_loops(d)[-len(ivs):]
    n_sp = sum(iv.iter_type == 0 for iv in ivs)
    sch.reorder(*own[n_sp:], own[n_sp - 1])        # taps outside, contiguous w innermost
    _vectorize_inner(sch, own[n_sp - 1], plan.vector)
    if pad is not None:
        _pad_at(sch, pad, at, plan)
        steps("compute X_pad per tile next to D: the tile's padded window stays in L1; a partition hint splits "
              "its zero border from the plain copy.")


def _pad_at(sch: Schedule, pad, at, plan: Plan) -> None:
    """Padding per tile; hinting its own loops lets lowering split the border (zeros) from the interior (copy)."""
    sch.compute_at(pad, at)
    loops = sch.get_loops(pad)
    top = next(i for i, lp in enumerate(loops) if sch.get_sref(lp).same_as(sch.get_sref(at)))
    _vectorize_inner(sch, loops[-1], plan.vector)
    _hint(sch, sch.get_loops(pad)[top + 1:])


def _materialize(sch: Schedule, b, plan: Plan, steps: Steps, name: str) -> None:
    if plan.parallel:
        loops = sch.get_loops(b)[:2]
        sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])
    steps(f"{name} is materialized: its own array, filled in full before it is read"
          + (", in parallel." if plan.parallel else "."))


def _register_patch(sch: Schedule, parts: dict, plan: Plan, steps: Steps) -> None:
    """Vectorize the patch's contiguous axis; unroll the rest so every accumulator gets its own register."""
    po = parts["po"]
    vec = _vectorize_inner(sch, po[-1], plan.vector)
    if vec is None:
        return
    steps(f"vectorize the innermost patch axis: {plan.vector} floats per SIMD instruction.")
    regs = prod(plan.patches) // plan.vector
    if 1 < regs <= MAX_VECTOR_REGS:
        # a pragma, not sch.unroll: a remainder split off by LoopPartition may have a non-constant extent
        sch.annotate(po[0] if len(po) > 1 else vec[0], "pragma_auto_unroll_max_step", regs)
        steps(f"unroll the patch: {regs} vector accumulators, each in its own register.")


def _vectorize_inner(sch: Schedule, loop, vector: int) -> list | None:
    """Vectorize `loop` by `vector` lanes; the loops it became ([outer,] lanes), or None if it cannot."""
    ext = sch.get(loop).extent
    if vector <= 1 or not isinstance(ext, IntImm) or int(ext) % vector:
        return None
    ext = int(ext)
    loops = sch.split(loop, [None, vector]) if ext > vector else [loop]
    sch.vectorize(loops[-1])
    return list(loops)


def _has_remainder(sch: Schedule, blk, plan: Plan) -> bool:
    ext = [int(iv.dom.extent) for iv in sch.get(blk).iter_vars]
    return any(n % t for n, t in zip(ext, plan.tiles + plan.splits))


def _partition_hints(sch: Schedule, bo) -> None:
    """Mark every loop from the block tiles inward for LoopPartition (full tiles vs. the remainder)."""
    top = sch.get_sref(bo)
    seen, todo = [], [bo]
    for b in sch.get_child_blocks(bo):
        loops = sch.get_loops(b)
        at = next(i for i, lp in enumerate(loops) if sch.get_sref(lp).same_as(top))
        todo += loops[at + 1:]
    for loop in todo:
        sref = sch.get_sref(loop)
        if not any(sref.same_as(s) for s in seen):
            seen.append(sref)
            _hint(sch, [loop])


def _hint(sch: Schedule, loops: list) -> None:
    """Vectorized loops are left alone: a partition of one could get a non-constant extent."""
    for lp in loops:
        if sch.get(lp).kind != ForKind.VECTORIZED:
            sch.annotate(lp, "pragma_loop_partition_hint", 1)
