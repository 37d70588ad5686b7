"""The fpga schedule engine: an FpgaPlan -> TensorIR that stages operands through the accelerator's buffers.

The loop nest it builds (gemm; conv1d has one output axis):
    for the tile loops, in the order `resident` asks for      (io, jo, ko permuted; knobs.layout())
        reset the accumulator tile                             pragma_fpga_reset  (before the first k-tile)
        DMA: A tile -> input buffer, B tile -> weight buffer   pragma_fpga_load   (at the loop where it changes)
        for ii, jt, kt:                                        pragma_fpga_gemm   (one instruction)
            for jb < BLOCK_OUT, kb < BLOCK_IN:                 one core operation: a row of 16 inputs times a
                acc[ii, jt, jb] += inp[ii, kt, kb] * wgt[..]   16 x 16 block, accumulated in the register file
        DMA: accumulator tile -> C                             pragma_fpga_store  (after the last k-tile)
Each `pragma_fpga_*` loop annotation survives lowering as an AttrStmt around its loop nest: that nest is one
accelerator instruction, which the simulator (sim.py) runs and times as a whole. The scopes are VTA's own,
"local.inp_buffer" / "local.wgt_buffer" / "local.acc_buffer": TVM 0.27's pass list (lowering.passes())
keeps them as they are, with no memory-info registration. Double buffering is TVM's software pipelining on
the innermost tile loop that has more than one iteration: the resets and loads under it become stage 0, the
GEMM and the store stage 1, so InjectSoftwarePipeline gives each of those buffers two slots and runs tile
t+1's loads beside tile t's compute.
"""
from __future__ import annotations

from tvm.s_tir import Schedule

from ..schedules._common import Steps, read_index
from .accel import ACC, INP, WGT
from .knobs import FpgaPlan

LOAD, GEMM, RESET, STORE = "pragma_fpga_load", "pragma_fpga_gemm", "pragma_fpga_reset", "pragma_fpga_store"


def schedule(sch: Schedule, plan: FpgaPlan, steps: Steps) -> Schedule:
    lay = plan.layout
    t = dict(plan.tiles)
    bi, bo = plan.block_in, plan.block_out
    blk = sch.get_sblock("C")
    if plan.op == "gemm":
        i, j, k = sch.get_loops(blk)
        io, ii = sch.split(i, [None, t["m"]])
        jo, jt, jb = sch.split(j, [None, t["n"] // bo, bo])
        ko, kt, kb = sch.split(k, [None, t["k"] // bi, bi])
        loops, inner = {"m": io, "n": jo, "k": ko}, [ii, jt, kt, jb, kb]
        steps(f"tile C into {t['m']} x {t['n']} outputs and K into {t['k']}-deep steps; inside a tile each core "
              f"operation is one row of A times a {bi} x {bo} block of B (jb x kb innermost).")
        steps({"acc": "output-stationary: the C tile stays in the accumulator while A and B tiles stream past.",
               "wgt": "B-stationary: each B tile stays in the weight buffer while every row tile of A streams "
                      "past; the accumulator holds all M rows of the column tile.",
               "inp": "A-stationary: each A tile stays in the input buffer while every column tile of B streams "
                      "past; the accumulator holds all N columns of the row tile."}[plan.resident])
    else:
        i, k = sch.get_loops(blk)
        io, jt, jb = sch.split(i, [None, t["i"] // bo, bo])
        ko, kt, kb = sch.split(k, [None, t["k"] // bi, bi])
        loops, inner = {"i": io, "k": ko}, [jt, kt, jb, kb]
        steps(f"tile the outputs by {t['i']} and the kernel into {t['k']}-tap steps; one core operation computes "
              f"{bo} neighbouring outputs from {bi} taps, C[i + jb] += A_pad[i + jb + kb] * W[N - 1 - kb]: the "
              f"signal window is its {bo} x {bi} (Toeplitz) block, the kernel its {bi}-vector.")
    order = [loops[a] for a in lay.order]
    sch.reorder(*order, *inner)
    anchors = dict(lay.anchors)
    names = {INP: "A" if plan.op == "gemm" else "A_pad", WGT: "B" if plan.op == "gemm" else "W"}
    stages = []
    for scope in (INP, WGT):
        st = sch.cache_read(blk, read_index(sch, blk, names[scope]), scope)
        if names[scope] == "A_pad":            # the padding becomes the copy's bounds test
            sch.compute_inline(sch.get_sblock("A_pad"))
        if anchors[scope] is not None:
            sch.compute_at(st, loops[anchors[scope]])
        stages.append(st)
        where = f"at the {anchors[scope]} tile loop" if anchors[scope] else "once, before every loop"
        steps(f"cache_read {names[scope]} into {scope} {where}: one DMA load per tile"
              + (", the zero padding written on chip as VTA's load pads." if names[scope] == "A_pad" else "."))
    c = sch.cache_write(blk, 0, ACC)
    if anchors[ACC] is not None:
        sch.reverse_compute_at(c, loops[anchors[ACC]])
    steps(f"accumulate in {ACC} (the core's register file) and DMA each finished tile to C once.")
    after = lay.order[lay.order.index(anchors[ACC]) + 1] if anchors[ACC] else lay.order[0]
    init = sch.decompose_reduction(blk, loops[after])
    sch.annotate(inner[0], GEMM, 1)
    for st in stages:
        _mark_nest(sch, st, LOAD, blk)
    _mark_nest(sch, c, STORE, blk)
    _mark_nest(sch, init, RESET, blk)
    steps("mark each DMA copy, accumulator reset and GEMM loop nest as one accelerator instruction "
          "(pragma_fpga_*): the simulator runs and times each as a whole.")
    if lay.piped is not None:
        p = loops[lay.piped]
        kids = [sch.get(b).name_hint for b in sch.get_child_blocks(p)]
        stage = [1 if n == "C_update" or n.startswith("C_local") else 0 for n in kids]
        sch.annotate(p, "software_pipeline_stage", stage)
        sch.annotate(p, "software_pipeline_order", list(range(len(kids))))
        steps(f"double-buffer at the {lay.piped} tile loop (software pipeline, 2 stages): "
              f"{', '.join(n for n, s_ in zip(kids, stage) if s_ == 0)} for tile t+1 run beside "
              f"{', '.join(n for n, s_ in zip(kids, stage) if s_ == 1)} of tile t, each in its own slot.")
    return sch


def _mark_nest(sch: Schedule, block, pragma: str, compute) -> None:
    """Annotate the outermost loop that belongs to this block alone (its own copy or reset loops); a block
    with none gets a unit loop to carry the mark."""
    shared = sch.get_loops(compute)
    own = [l for l in sch.get_loops(block) if not any(_same_loop(sch, l, s) for s in shared)]
    sch.annotate(own[0] if own else sch.add_unit_loop(block), pragma, 1)


def _same_loop(sch, a, b) -> bool:
    return sch.get_sref(a).same_as(sch.get_sref(b))


