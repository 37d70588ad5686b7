"""The CPU schedule engine: a Plan (tiles, patches, split, order, stages) -> LLVM-ready TensorIR.

Orders of the loop nest (bo = block tiles, to = patches in a tile, po = one patch, ro/ri = reduction tiles):
    plain    bo to po ro ri     the loop nest as written: the reduction innermost
    k_outer  bo ro to ri po     cache blocking: one reduction tile of the operands stays in cache
    k_inner  bo to ro ri po     each patch accumulates over the whole reduction in registers
"""
from __future__ import annotations

from tvm.s_tir import Schedule

from ..knobs import Plan
from ._common import Steps, inline_pads, producer, read_index

ORDER = {
    "plain": ("bo", "to", "po", "ro", "ri"),
    "k_outer": ("bo", "ro", "to", "ri", "po"),
    "k_inner": ("bo", "to", "ro", "ri", "po"),
}


def schedule(sch: Schedule, plan: Plan, steps: Steps) -> Schedule:
    blk = sch.get_sblock("C")
    stages = dict(plan.caches)
    keep = {n for n, s in stages.items() if s in ("global", "compute_at")}
    if "D" in stages:
        keep = set()            # the depthwise stage reads its padding inline
    inline_pads(sch, keep, steps)

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
           "k_outer": "reorder so the reduction tile is outside the patch loops and the innermost loop walks "
                      "contiguous output (and input) memory: one reduction tile of the operands stays in cache.",
           "k_inner": "reorder so each patch accumulates over the whole reduction before moving on: the "
                      "accumulators never leave registers."}[plan.order]
          + f" Tiles {'x'.join(map(str, plan.tiles))}, patches {'x'.join(map(str, plan.patches))}, "
            f"reduction split {'x'.join(map(str, plan.splits))}.")
    bo = sch.fuse(*parts["bo"]) if len(parts["bo"]) > 1 else parts["bo"][0]
    if plan.parallel:
        sch.parallel(bo)
        steps("run the block tiles in parallel on all cores: tiles write disjoint outputs.")

    for name, where in plan.caches:
        d = producer(sch, name)
        if name == "B" and where == "packed":
            pk = sch.cache_read(blk, read_index(sch, blk, "B"), "global")
            sch.compute_at(pk, parts["ro"][-1] if plan.order == "k_outer" else bo)
            sch.vectorize(sch.get_loops(pk)[-1])
            steps("pack the K-tile x N-tile panel of B into a contiguous buffer once per tile: the inner loop then "
                  "streams unit-stride vectors with no TLB or cache-set conflicts.")
        elif d is not None and where == "compute_at":
            at = parts["ro"][-1] if name == "D" and plan.order == "k_outer" else bo
            sch.compute_at(d, at)
            steps(f"compute {name} per tile inside the consumer's loop nest (compute_at): the intermediate stays "
                  "in cache and never round-trips through memory.")
            if name == "D":
                dl = sch.get_loops(d)
                n_sp = len([iv for iv in sch.get(d).iter_vars if iv.iter_type == 0])
                sp_inner = dl[len(dl) - len(sch.get(d).iter_vars) + n_sp - 1]
                red = dl[len(dl) - len(sch.get(d).iter_vars) + n_sp:]
                sch.reorder(*red, sp_inner)
                _vectorize_inner(sch, sp_inner, plan.vector)
        elif d is not None and where == "global" and name == "D" and plan.parallel:
            sch.parallel(sch.fuse(*sch.get_loops(d)[:2]))

    if plan.cache_out == "local" and plan.order != "plain":
        out = sch.cache_write(blk, 0, "local")
        sch.reverse_compute_at(out, parts["to"][-1] if plan.order == "k_inner" else bo)
        _vectorize_inner(sch, sch.get_loops(out)[-1], plan.vector)
        steps("accumulate into a tile-sized local buffer (C_local) that stays in registers/L1, and write the "
              "output once.")
    if plan.order != "plain" and plan.vector > 1:
        if _vectorize_inner(sch, parts["po"][-1], plan.vector):
            steps(f"vectorize the innermost patch axis: {plan.vector} floats per SIMD instruction.")
    first_r = next(l for key in ORDER[plan.order] if key in ("ro", "ri") for l in parts[key])
    sch.decompose_reduction(blk, first_r)
    if plan.unroll:
        sch.annotate(bo, "pragma_auto_unroll_max_step", plan.unroll)
        steps(f"unroll inner loops up to {plan.unroll} steps.")
    return sch


def _vectorize_inner(sch: Schedule, loop, vector: int) -> bool:
    ext = int(sch.get(loop).extent)
    if vector <= 1 or ext % vector:
        return False
    if ext > vector:
        _, loop = sch.split(loop, [None, vector])
    sch.vectorize(loop)
    return True
