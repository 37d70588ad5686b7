"""The GPU schedule engine: a Plan (tiles, patches, splits, cache scopes) -> CUDA TensorIR.

The loop nest it builds, for every operator:
    blockIdx.x      = fused block tiles          (bo)
      threadIdx.x   = fused threads in a tile    (to)
        for ro      = reduction tiles            (operands are staged here: a shared stage's region spans
                                                  every thread of the block, a local stage's one thread)
          for ri    = one reduction tile
            for p   = the thread's output patch  (register accumulators)
        write the patch back                     (after the whole reduction)
"""
from __future__ import annotations

from math import prod

from tvm.s_tir import Schedule

from ..knobs import TRANSPOSED_ROW, Plan, reg_cap
from ._common import Steps, inline_pads, pad_to_tiles, producer, read_index


def _cooperative(sch: Schedule, blk, depth: int, threads: int, vector: int, steps: Steps, name: str) -> None:
    """All threads of the block share the copy: fuse the copy loops, split by thread count (and vector).
    A computed stage (the depthwise D) keeps its reduction loops inside: each thread finishes its elements."""
    loops = sch.get_loops(blk)[depth:]
    n_red = len([iv for iv in sch.get(blk).iter_vars if iv.iter_type == 2 and int(iv.dom.extent) > 1])
    loops = loops[:len(loops) - n_red]
    if not loops:           # a one-element stage: every thread computes it, nothing to share
        return
    f = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    if any(iv.iter_type == 2 for iv in sch.get(blk).iter_vars):
        # accumulate the stage's reduction in a register, write shared memory once
        _, t = sch.split(f, [None, threads])
        sch.bind(t, "threadIdx.x")
        acc = sch.cache_write(blk, 0, "local")
        sch.reverse_compute_at(acc, t)
        steps(f"compute {name} cooperatively: each of the {threads} threads finishes its elements' reduction in a "
              "register and stores each result to shared memory once.")
        return
    if vector > 1:
        _, t, v = sch.split(f, [None, threads, vector])
        sch.vectorize(v)
        steps(f"cooperative fill of {name}: all {threads} threads copy {vector} contiguous floats each (one "
              f"{32 * vector // 8}-byte load) per pass, so a warp's loads coalesce.")
    else:
        _, t = sch.split(f, [None, threads])
        steps(f"cooperative fill of {name}: all {threads} threads copy one element each per pass; neighbouring "
              "threads read neighbouring addresses, so a warp's loads coalesce.")
    sch.bind(t, "threadIdx.x")


def _per_element(sch: Schedule, blk, threads: int | None = None):
    """The stage's own kernel, one thread per element: its spatial loops fused and split into blocks of `threads`
    (at most 256 where None: as many as there are elements); returns the thread loop and the thread count."""
    loops = sch.get_loops(blk)
    n_sp = len([iv for iv in sch.get(blk).iter_vars if iv.iter_type == 0])
    f = sch.fuse(*loops[:n_sp])
    threads = threads or min(256, int(sch.get(f).extent))
    bx, tx = sch.split(f, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return tx, threads


def _naive_stage(sch: Schedule, blk, steps: Steps, name: str) -> None:
    """An intermediate kept in global memory runs as its own kernel, one thread per element."""
    _per_element(sch, blk, 256)
    steps(f"{name} stays in global memory: its own kernel, one thread per element, 256 threads per block.")


def _own_kernel(sch: Schedule, blk, steps: Steps, name: str, scope: str) -> None:
    """An intermediate computed once, by a kernel of its own, into global memory: one thread per element (the
    innermost axis across neighbouring threads), its reduction summed in a register and stored once."""
    # (one block where the elements are fewer than 256: split into a single block, TVM's write-back of the
    # register dropped the remainder test, and the threads past the end wrote past D)
    tx, threads = _per_element(sch, blk)
    acc = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(acc, tx)
    steps(f"compute {name} once, in a kernel of its own: one thread per element, {threads} threads per block, "
          "neighbouring threads on neighbouring elements (their input windows overlap, so the repeated reads hit "
          "the L1 cache); each sums its reduction in a register and stores it to global memory once. The next "
          f"kernel reads {name} " + {"global": "straight from global memory.",
                                     "local": "into per-thread registers, as an input."}.get(
              scope, "through shared memory, as a GEMM reads an operand."))


def _split_reduction(sch: Schedule, plan: Plan, steps: Steps) -> Schedule:
    """Few outputs, long reduction: `rthreads` threads share each output. rfactor gives every thread a
    partial sum of every rthreads-th product (neighbouring lanes read neighbouring addresses); the partials
    meet in shared memory and one thread per output adds them up."""
    inline_pads(sch, set(), steps)
    blk = sch.get_sblock("C")
    i, k = sch.get_loops(blk)
    r = plan.rthreads
    tile = plan.tiles[0]
    threads = tile * r
    ko, kt = sch.split(k, [None, r])
    rf = sch.rfactor(kt, 0)           # before the output split: rfactor drops a remainder predicate
    bo, it = sch.split(sch.get_loops(blk)[0], [None, tile])
    steps(f"rfactor the reduction by {r}: thread lane j sums products j, j + {r}, j + {2 * r}, ... of its output "
          f"(a {r}-way split of each output's {plan.splits[0] if plan.splits else ''} reduction).")
    sch.bind(bo, "blockIdx.x")
    sch.set_scope(rf, 0, "shared")
    sch.compute_at(rf, bo)             # before C's thread split, so the region is this block's `tile` outputs
    _, ct = sch.split(it, [None, threads])
    sch.bind(ct, "threadIdx.x")
    sch.decompose_reduction(blk, sch.get_loops(blk)[-1])
    _cooperative(sch, rf, 1, threads, 1, steps, f"the {tile} x {r} partial sums C_rf")
    steps(f"after a barrier, one thread per output adds the {r} partial sums from shared memory.")
    if plan.unroll:                    # the partial sums only: the final adds stay one rolled loop
        inner = sch.get_loops(rf)[1]
        sch.annotate(inner, "pragma_auto_unroll_max_step", plan.unroll)
        sch.annotate(inner, "pragma_unroll_explicit", 1)
        steps(f"unroll the partial sums up to {plan.unroll} steps: every load of the thread's share is in "
              "flight at once.")
    _launch_bounds(plan, threads, steps)
    return sch


def schedule(sch: Schedule, plan: Plan, steps: Steps) -> Schedule:
    if plan.rthreads > 1:
        return _split_reduction(sch, plan, steps)
    blk = producer(sch, "C_pad")       # conv1d's definition padded to whole tiles (pad_tiles)
    padded_def = blk is not None
    blk = blk if padded_def else sch.get_sblock("C")
    staged = {n for n, s in plan.caches if s != "global"}
    # the operator's own padding (a convolution's borders), before pad_tiles adds its padded views: those stay
    # blocks of their own until a cache stage reads them, which takes their zero test into its copies (inlined
    # here, split-K's A_pad would put the test into every multiply-add: 2.8x the shared loads)
    inline_pads(sch, staged, steps)
    padded = padded_def
    if plan.kblocks > 1:
        blk, plan, padded = split_k_blocks(sch, blk, plan, steps)
    out_name = sch.get(blk).writes[0].source.name        # C; with split-K the partial sums (C_rf or C_pad_rf)
    padded = padded or pad_to_tiles(sch, blk, plan, steps, PAD_WHY)
    for name, scope in plan.caches:
        d = producer(sch, name)
        if d is not None and name in plan.separate:
            _own_kernel(sch, d, steps, name, scope)
        elif d is not None and scope == "global" and not name.endswith("_pad"):
            _naive_stage(sch, d, steps, name)
        if padded and scope == "global" and producer(sch, f"{name}_pad") is not None:
            sch.compute_inline(producer(sch, f"{name}_pad"))    # the zero test then sits in the k loop

    loops = sch.get_loops(blk)
    ns = len(plan.tiles)
    bo, to, po, ro, ri = [], [], [], [], []
    for loop, t, p in zip(loops[:ns], plan.tiles, plan.patches):
        b, th, pp = sch.split(loop, [None, t // p, p])
        bo.append(b), to.append(th), po.append(pp)
    for loop, s in zip(loops[ns:], plan.splits):
        o, i = sch.split(loop, [None, s])
        ro.append(o), ri.append(i)
    sch.reorder(*bo, *to, *ro, *ri, *po)
    steps(f"split each output axis into block tile {'x'.join(map(str, plan.tiles))} and thread patch "
          f"{'x'.join(map(str, plan.patches))}, and the reduction into tiles of {'x'.join(map(str, plan.splits))}.")
    if plan.group_rows > 1 and len(bo) >= 2:      # the last two block axes are M and N (split-K's kb before)
        go, gi = sch.split(bo[-2], [None, plan.group_rows])
        sch.reorder(go, bo[-1], gi)
        bo = [*bo[:-2], go, bo[-1], gi]
        steps(f"launch the blocks in groups of {plan.group_rows} block rows, down each column of the group in "
              "turn: the blocks resident together share the same few column panels of B in L2.")
    bx = sch.fuse(*bo)
    sch.bind(bx, "blockIdx.x")
    tx = sch.fuse(*to)
    sch.bind(tx, "threadIdx.x")
    threads = prod(t // p for t, p in zip(plan.tiles, plan.patches))
    steps(f"bind the block tiles to blockIdx.x and the {threads} threads of a tile to threadIdx.x; each thread "
          f"owns a {'x'.join(map(str, plan.patches))} patch of outputs, reusing every loaded value that many times.")
    depth = 2 + len(ro)           # loops above a stage computed at the last reduction tile: bx, tx, ro...
    fills = []                    # names of the blocks that fill shared memory (for pipelining)

    for name, scope in plan.caches:
        if scope == "global":
            continue
        d = producer(sch, name)
        if name in plan.separate:
            d = None            # computed by its own kernel: staged from global like an input
        if scope in ("shared", "shared+local"):
            if d is not None:
                sch.set_scope(d, 0, "shared")
                stage = d
            else:
                stage = _cache_read(sch, blk, name, "shared", padded)
            for spec in plan.interleave:
                if spec[0] == name:
                    _interleave(sch, stage, plan, spec, steps)
            if name in plan.transposed:
                _transpose(sch, stage, name, steps)
            sch.compute_at(stage, ro[-1])
            shared_name = sch.get(stage).writes[0].source.name
            fills.append(sch.get(stage).name_hint)
            w = plan.width(name)
            vec = w if (d is None and name not in plan.transposed
                        and _fill_vectorizable(sch, stage, depth, threads, w)) else 1
            _cooperative(sch, stage, depth, threads, vec, steps, f"{name}_shared")
            steps(f"stage {name} in shared memory once per reduction tile: every thread of the block reads the "
                  "tile from shared memory instead of global; barriers separate the fill from the use.")
            if scope == "shared+local":
                loc = sch.cache_read(blk, read_index(sch, blk, shared_name), "local")
                sch.compute_at(loc, ri[-1])
                steps(f"copy the thread's slice of {name} from shared into registers at each reduction step: "
                      "the patch loop then reads registers only.")
        else:   # local
            if d is not None:
                sch.set_scope(d, 0, "local")
                stage = d
            else:
                stage = _cache_read(sch, blk, name, "local", padded)
            sch.compute_at(stage, ro[-1])
            steps(f"cache {name} in per-thread registers once per reduction tile: no barrier, but every thread "
                  "loads its own copy from global.")

    if plan.cache_out == "local":
        out = sch.cache_write(blk, 0, "local")
        sch.reverse_compute_at(out, tx)
        # (padded along M or N) the write-back of the padded patch writes C where C has elements; with split-K
        # the sum kernel writes C, so there is no C_pad to inline here
        if padded and producer(sch, f"{out_name}_pad") is not None:
            sch.reverse_compute_inline(producer(sch, f"{out_name}_pad"))
        elif padded_def:
            sch.reverse_compute_inline(sch.get_sblock("C"))
        steps("accumulate the output patch in registers (C_local) and write it to global once at the end.")
        inner = sch.get_loops(out)[-1]
        w = plan.width("C")
        if w > 1 and plan.patches[-1] % w == 0:
            _, v = sch.split(inner, [None, w])
            sch.vectorize(v)
            steps(f"vectorize the patch write-back: {w} floats per store.")
    sch.decompose_reduction(blk, ro[0])
    steps("decompose the reduction: zero the accumulators once before the reduction loops.")
    if plan.pipeline:
        annotate_pipeline(sch, ro[-1], fills, plan.stages, plan.async_copy)
        steps(f"software-pipeline the reduction tiles over {plan.stages} shared buffers: the tiles of step "
              f"k+{plan.stages - 1} are loaded while the threads compute on step k, so global-memory latency hides "
              "behind arithmetic.")
        if plan.async_copy:
            steps("copy the pipelined tiles with cp.async: global memory goes straight into shared memory, no "
                  "register holds it and no thread waits for it until the tile is needed (one wait per k tile).")
            if plan.one_barrier:
                steps("one barrier per k tile (applied after TVM places its barriers, kernels/lowering."
                      "merge_barriers): each thread waits for its own copies of tile k, one barrier then makes tile "
                      "k visible to all and proves that every thread has finished with tile k-1, and only after it "
                      f"are the copies of tile k+{plan.stages - 1} issued into that freed buffer.")
    _launch_bounds(plan, threads, steps)
    if plan.unroll:
        sch.annotate(bx, "pragma_auto_unroll_max_step", plan.unroll)
        sch.annotate(bx, "pragma_unroll_explicit", 1)
        steps(f"unroll inner loops up to {plan.unroll} steps: fewer branches, more independent loads in flight.")
    return sch


PAD_WHY = ("the copies from global read zeros beyond the edges of A and B, so no register load or multiply-add in "
           "the k loop tests bounds and the edge blocks run the same code as the others; only the copies from global "
           "and the write-back of C test bounds.")


def split_k_blocks(sch: Schedule, blk, plan: Plan, steps: Steps):
    """Split-K across blocks: rfactor the reduction into `kblocks` partial sums C_rf[kb, m, n], each computed by
    its own blocks with the plan's tiles (a leading tile of 1 along kb, so blockIdx.x covers kb as well), then a
    second kernel that adds the partial sums. With pad_tiles the output is padded first (pad_einsum needs the
    plain GEMM), the partial sums have the padded size, and the second kernel writes only the real outputs.
    Returns the partial-sum block, the plan for it, and whether the operands were padded."""
    from dataclasses import replace
    padded = pad_to_tiles(sch, blk, plan, steps, PAD_WHY)
    i, j, k = sch.get_loops(blk)
    ko, _ = sch.split(k, [plan.kblocks, None])
    rf = sch.rfactor(ko, 0)
    loops = sch.get_loops(rf)                   # i, j, kb, k within: kb first, so it is a spatial axis like m, n
    sch.reorder(loops[2], loops[0], loops[1])
    steps(f"split K across blocks (rfactor): {plan.kblocks} groups of blocks each sum 1/{plan.kblocks} of K into "
          f"their own partial sums C_rf[{plan.kblocks}][M][N] in global memory, so the grid has {plan.kblocks}x as "
          "many blocks as output tiles.")
    f = sch.fuse(*sch.get_loops(blk)[:2])
    copy = producer(sch, "C_pad")
    if copy is not None:        # the padded sum in a register, the real outputs written to C
        sch.set_scope(blk, 0, "local")
    else:
        copy = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(copy, f)     # before the split: its remainder test then covers the write too
    bx, tx = sch.split(f, [None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    steps(f"then a second kernel adds the {plan.kblocks} partial sums of each output: one thread per output, 256 "
          "threads per block, neighbouring threads reading neighbouring partial sums; each thread adds them in a "
          "register and writes its output once" + (" (only the real outputs: the padded ones are dropped)."
                                                   if padded else "."))
    shift = tuple((name, dim, axis + 1, g) for name, dim, axis, g in plan.interleave)
    return rf, replace(plan, tiles=(1, *plan.tiles), patches=(1, *plan.patches), interleave=shift, kblocks=1,
                       pad=False), padded


def _cache_read(sch: Schedule, blk, name: str, scope: str, padded: bool):
    """A cache stage of input `name`; where padded, read from its zero-padded view, inlined into the copy."""
    pad = producer(sch, f"{name}_pad") if padded else None
    if pad is None:
        return sch.cache_read(blk, read_index(sch, blk, name), scope)
    stage = sch.cache_read(blk, read_index(sch, blk, f"{name}_pad"), scope)
    sch.compute_inline(pad)
    return stage


def annotate_pipeline(sch: Schedule, loop, fills: list[str], stages: int, async_copy: bool) -> None:
    """Software-pipeline `loop`: the statements that fill shared memory (blocks named in `fills`) run in stage
    0, the rest `stages - 1` steps later; with `async_copy` the fills become cp.async copies."""
    body = sch.get(loop).body
    parts = list(body.seq) if type(body).__name__ == "SeqStmt" else [body]
    sch.annotate(loop, "software_pipeline_stage",
                 [0 if any(f'sblock("{n}")' in p.script() for n in fills) else stages - 1 for p in parts])
    sch.annotate(loop, "software_pipeline_order", list(range(len(parts))))
    if async_copy:
        sch.annotate(loop, "software_pipeline_async_stages", [0])


def _launch_bounds(plan: Plan, threads: int, steps: Steps) -> None:
    """min_blocks is applied when compiling (kernels/lowering.compile); the schedule only says why."""
    if plan.min_blocks:
        steps(f"launch bounds ({threads} threads, {plan.min_blocks} blocks per SM): ptxas keeps each thread within "
              f"{reg_cap(threads, plan.min_blocks)} registers so {plan.min_blocks} blocks are resident on an SM "
              "together, and one block's barrier or load wait is covered by the others' arithmetic.")


def _transpose(sch: Schedule, stage, name: str, steps: Steps) -> None:
    """Store a 2-D shared tile transposed ([r][c] -> [c][r]), each new row padded to a stride of 4 mod 32 floats."""
    sch.transform_layout(stage, ("write", 0), lambda r, c: (c, r))
    sch.storage_align(stage, 0, axis=0, factor=TRANSPOSED_ROW[0], offset=TRANSPOSED_ROW[1])
    steps(f"store {name}_shared transposed, k-major: a thread's patch of {name} for one k step is contiguous (one "
          "128-bit shared load per 4 values), so it holds one k step in registers, not four; each k row is padded to "
          "a stride of 4 mod 32 floats, so the copies of neighbouring k values into one column meet different "
          "banks. The copies from global are then 4-byte cp.async copies (k is contiguous in global, m in shared).")


def _interleave(sch: Schedule, stage, plan: Plan, spec: tuple[str, int, int, int], steps: Steps) -> None:
    """Store a shared tile with the threads' patches interleaved along one dim: element j of thread t's patch
    (in groups of g contiguous) sits at (j // g, t, j % g), so the threads of a warp read neighbouring groups.
    Where that dim is not the innermost, each of its rows is padded when rows of a multiple of 32 floats would
    start in the same bank. Applied to the whole buffer before compute_at (so tiles must divide the axis)."""
    name, dim, axis, g = spec
    t, p = plan.tiles[axis], plan.patches[axis]
    T = t // p

    def index_map(*idx):
        r = idx[dim]
        return (*idx[:dim], r // t, r % t % p // g, r % t // p, r % g, *idx[dim + 1:])

    sch.transform_layout(stage, ("write", 0), index_map, assume_injective_transform=True)
    rank = len(sch.get(stage).writes[0].region)
    inner = plan.splits[-1]                 # a row of the tile: one k tile (the gemm A tile is [m][k])
    pad = plan.pad_rows if dim + 4 < rank and g == 1 else 0
    if pad:
        sch.storage_align(stage, 0, axis=dim + 3, factor=32, offset=(inner + pad) % 32)   # stride inner + pad
    what = "row" if dim + 4 < rank else "column"
    steps(f"store {name}_shared with the patches interleaved: {what} j of thread t's patch at "
          f"(j // {g}) * {T * g} + t * {g} + j % {g} of the tile, so the threads of a warp read neighbouring "
          f"{what}s" + (f", each of {inner} floats padded by {pad} so that neighbours start in different banks"
                        if pad else "") + ": no shared-memory bank is hit twice by one 128-bit read.")


def _fill_vectorizable(sch: Schedule, stage, depth: int, threads: int, vector: int) -> bool:
    if vector == 1:
        return False
    ext = [int(sch.get(l).extent) for l in sch.get_loops(stage)[depth:]]
    return bool(ext) and ext[-1] % vector == 0 and prod(ext) % (threads * vector) == 0
