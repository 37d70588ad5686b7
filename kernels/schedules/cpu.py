"""The CPU schedule engine: a Plan (tiles, patches, split, order, stages) -> LLVM-ready TensorIR.

Orders of the output loop nest (bo = block tiles, to = patches in a tile, po = one patch, ro/ri = reduction tiles):
    plain    bo to po ro ri     the loop nest as written: the reduction innermost
    k_outer  bo ro to ri po     cache blocking: one reduction tile of the operands stays in cache
    k_inner  bo to ro ri po     each patch accumulates over the whole reduction in registers
Intermediates (the padding A_pad / X_pad, the depthwise result D) live in one of three places:
    global      their own array, filled before the consumer runs
    inline      recomputed where they are read (the padding becomes a bounds test)
    compute_at  computed per tile inside the consumer's loop nest, so the tile stays in cache
Remainders: a tile that does not divide its axis leaves a predicate (T.where) on outer loops, which costs
little. The contiguous axis is different: a partial last vector would put a per-lane test in the vector
loop and scalarize it, so that axis is peeled (loop_partition) into full vectors and the few left over.
"""
from __future__ import annotations

from math import prod

from tvm.s_tir import Schedule
from tvm.tirx import IntImm

from ..knobs import Plan
from ._common import Steps, is_pad, pad_to_tiles, producer, read_index

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

    if pad_to_tiles(sch, blk, plan, steps, "every patch is whole, so the vector loop has no lane that tests "
                    "bounds and no remainder runs scalar code; the zero rows and columns are read from padded copies "
                    "of the operands and the padded outputs are dropped when C is written."):
        _padded_operands(sch, plan, stages, steps)
    blk, tail = _peel(sch, blk, plan, stages, steps)
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
            src = "B_pad" if producer(sch, "B_pad") is not None else "B"
            pk = sch.cache_read(blk, read_index(sch, blk, src), "global")
            if src == "B_pad":          # the pack reads B with the bounds test: zeros beyond N
                sch.compute_inline(producer(sch, "B_pad"))
            sch.compute_at(pk, parts["ro"][-1] if plan.order == "k_outer" else bo)
            _vectorize_inner(sch, sch.get_loops(pk)[-1], plan.vector)
            steps("pack B's K-tile x N-tile panel contiguously once per tile: the inner loop streams unit-stride "
                  "vectors.")
        elif b is not None and is_pad(name) and producer(sch, "D") is None:
            if where == "compute_at":
                if tail is not None:    # the peeled nest reads the padding inline; the main nest per tile
                    b = sch.cache_read(blk, read_index(sch, blk, name), "global")
                    sch.compute_inline(producer(sch, name))
                _pad_at(sch, b, bo)
                steps(f"compute {name} per tile (compute_at): the tile's padded window stays in L1; zeros first, "
                      "then a plain copy of the interior (decompose_padding).")
            elif where == "global":
                _materialize(sch, b, plan, steps, name)

    if _accumulates_locally(plan):
        out = sch.cache_write(blk, 0, "local")
        sch.reverse_compute_at(out, parts["to"][-1] if plan.order == "k_inner" else bo)
        if producer(sch, "C_pad") is not None:      # pad_tiles: write back only the real outputs
            sch.reverse_compute_inline(producer(sch, "C_pad"))
        _vectorize_inner(sch, sch.get_loops(out)[-1], plan.vector)
        steps(f"accumulate in C_local, one per {'patch' if plan.order == 'k_inner' else 'tile'}, and write each "
              "output once.")
    if plan.order != "plain" and stages.get("D") != "inline":
        _register_patch(sch, parts, plan, steps)
    first_r = next(l for key in ORDER[plan.order] if key in ("ro", "ri") for l in parts[key])
    sch.decompose_reduction(blk, first_r)
    if tail is not None:
        _schedule_tail(sch, tail, plan)
    if plan.unroll:
        sch.annotate(bo, "pragma_auto_unroll_max_step", plan.unroll)
        steps(f"unroll inner loops up to {plan.unroll} steps.")
    return sch


def _tile(sch: Schedule, blk, plan: Plan, steps: Steps) -> dict[str, list]:
    """Split every axis into block tile / patches in the tile / patch (reductions: outer / inner). With SIMD the
    contiguous axis is split into vectors first, so a tile remainder is a test on whole vectors, never lanes."""
    loops = sch.get_loops(blk)
    ns = len(plan.tiles)
    parts = {"bo": [], "to": [], "po": [], "ro": [], "ri": [], "lanes": []}
    for a, (loop, t, p) in enumerate(zip(loops[:ns], plan.tiles, plan.patches)):
        if a == ns - 1 and _simd(plan):
            loop, lanes = sch.split(loop, [None, plan.vector])
            t, p = t // plan.vector, p // plan.vector
            parts["lanes"].append(lanes)
        ext = int(sch.get(loop).extent)
        if ext % p == 0 and ext % t:
            # whole patches, not whole tiles: the remainder is a test per patch, outside it (a test on a
            # vector inside the patch makes LLVM load and store its accumulators at every reduction step)
            rest, pp = sch.split(loop, [None, p])
            b, th = sch.split(rest, [None, t // p])
        else:
            b, th, pp = sch.split(loop, [None, t // p, p])
        parts["bo"].append(b), parts["to"].append(th), parts["po"].append(pp)
    for loop, s in zip(loops[ns:], plan.splits):
        o, i = sch.split(loop, [None, s])
        parts["ro"].append(o), parts["ri"].append(i)
    sch.reorder(*[l for key in ORDER[plan.order] + ("lanes",) for l in parts[key]])
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
        _pad_at(sch, pad, at)
        steps("compute X_pad per tile next to D: the tile's padded window stays in L1; zeros first, then a plain "
              "copy of the interior (decompose_padding).")


def _padded_operands(sch: Schedule, plan: Plan, stages: dict, steps: Steps) -> None:
    """After pad_tiles: the padded operand copies that no pack reads are filled once, in full (the test per
    element then runs once, not once per use). The real outputs go from C_local straight to C where the
    patches accumulate in registers (3-5% faster than a copy from C_pad at 1152x415x390 and 178x671x217);
    otherwise from C_pad to C in a parallel copy."""
    for name in ("A", "B"):
        b = producer(sch, f"{name}_pad")
        if b is not None and stages.get(name) != "packed":
            _materialize(sch, b, plan, steps, f"{name}_pad")
    out = producer(sch, "C_pad")
    if out is not None and not _accumulates_locally(plan):    # (else the write-back of C_local copies them)
        _materialize(sch, out, plan, steps, "the copy of the real outputs from C_pad to C")


def _pad_at(sch: Schedule, pad, at) -> None:
    """Padding per tile, decomposed into a fill of zeros and a copy of the in-bounds part: the copy's inner
    loop has no bounds test left, so LLVM vectorizes it."""
    sch.compute_at(pad, at)
    loops = sch.get_loops(pad)
    top = next(i for i, lp in enumerate(loops) if sch.get_sref(lp).same_as(sch.get_sref(at)))
    if top + 1 < len(loops) and sch.can_decompose_padding(pad, loops[top + 1]):
        sch.decompose_padding(pad, loops[top + 1])


def _materialize(sch: Schedule, b, plan: Plan, steps: Steps, name: str) -> None:
    if plan.parallel:
        loops = sch.get_loops(b)[:2]
        sch.parallel(sch.fuse(*loops) if len(loops) > 1 else loops[0])
    steps(f"{name} is materialized: its own array, filled in full before it is read"
          + (", in parallel." if plan.parallel else "."))


def _accumulates_locally(plan: Plan) -> bool:
    return plan.cache_out == "local" and plan.order != "plain"


def _register_patch(sch: Schedule, parts: dict, plan: Plan, steps: Steps) -> None:
    """Vectorize the lanes of the contiguous axis; unroll the patch so each accumulator gets its own register."""
    if not parts["lanes"]:
        return
    sch.vectorize(parts["lanes"][0])
    steps(f"vectorize the innermost patch axis: {plan.vector} floats per SIMD instruction.")
    regs = prod(plan.patches) // plan.vector
    if 1 < regs <= MAX_VECTOR_REGS:
        # a pragma rather than sch.unroll: it leaves alone a loop a remainder made non-constant
        sch.annotate(parts["po"][0], "pragma_auto_unroll_max_step", regs)
        steps(f"unroll the patch: {regs} vector accumulators, each in its own register.")


def _simd(plan: Plan) -> bool:
    return plan.vector > 1 and plan.order != "plain" and plan.patches[-1] % plan.vector == 0


def _peel(sch: Schedule, blk, plan: Plan, stages: dict, steps: Steps):
    """(main block, peeled block or None): the contiguous axis split into full vectors and the rest. The axis
    is moved outermost first so that each part gets a loop nest of its own. Not with D per tile or inline:
    D cannot follow its consumer into two loop nests.
    With one output axis (conv1d) the main nest keeps whole register patches and the rest (whole vectors and
    lanes) is peeled: a remainder inside the main nest's patches tests whole vectors there,
    and LLVM then loads and stores every accumulator at every tap (1.8x slower at M=89153, N=18; 1.4-2.5x at
    five other shapes from M=2711, N=29 to M=237568, N=17)."""
    n = len(plan.tiles)
    loops = sch.get_loops(blk)
    ext = int(sch.get(loops[n - 1]).extent)
    lanes = ext % plan.vector if _simd(plan) else 0
    vectors = 0
    if n == 1 and _simd(plan) and (ext % plan.patches[0]) * 40 < ext:
        # peeled outputs run on one core, reading A with bounds tests: worth it while they are under 2.5% of
        # the output (at M=N=1024, 127 of 2047 peeled, it was 1.15x slower)
        vectors = ext % plan.patches[0] - lanes
    if not (lanes or vectors) or stages.get("D") in ("compute_at", "inline") or plan.cache_out == "local":
        # loop_partition gives its blocks whole-buffer read/write regions, so a C_local written back after
        # it would cover every tile: with parallel tiles, two cores then write the same outputs (a race)
        return blk, None
    sch.reorder(loops[n - 1], *loops[:n - 1])
    main, rest = sch.loop_partition(loops[n - 1], [ext - vectors - lanes, None])
    main, rest = sch.get_child_blocks(main)[0], sch.get_child_blocks(rest)[0]
    ml = sch.get_loops(main)
    if n > 1:
        sch.reorder(*ml[1:n], ml[0])            # back to the operator's axis order for tiling
    steps(f"peel the last {vectors + lanes} of {ext} contiguous outputs into their own loop nest "
          "(loop_partition): " + (f"the main nest's register patches are all whole ({vectors // plan.vector} "
                                  f"whole vectors and {lanes} lanes left over), so none tests bounds inside."
                                  if n == 1 else "the main nest's vectors are all full, so no lane needs a bounds test."))
    return main, rest


def _schedule_tail(sch: Schedule, tail, plan: Plan) -> None:
    """The peeled outputs: the reduction outside, the few contiguous outputs innermost as one short vector."""
    n = len(plan.tiles)
    loops = sch.get_loops(tail)             # contiguous axis, the other spatial axes, the reductions
    sch.reorder(*loops[1:n], *loops[n:], loops[0])
    if plan.parallel and n > 1:
        sch.parallel(sch.fuse(*loops[1:n]) if n > 2 else loops[1])
    sch.vectorize(loops[0])
    if n < len(loops):
        sch.decompose_reduction(tail, loops[n])


def _vectorize_inner(sch: Schedule, loop, vector: int) -> list | None:
    """Vectorize `loop` by `vector` lanes; the loops it became ([outer,] lanes), or None if it cannot."""
    ext = sch.get(loop).extent
    if vector <= 1 or not isinstance(ext, IntImm) or int(ext) % vector:
        return None
    ext = int(ext)
    loops = sch.split(loop, [None, vector]) if ext > vector else [loop]
    sch.vectorize(loops[-1])
    return list(loops)
