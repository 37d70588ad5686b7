"""The machine's view: a schedule's compiled SASS (cubin from the pinned NVRTC, nvdisasm's listing) and its
warp-level emulation, which gives what Nsight Compute reads on the GPU.

    from kernels import sass
    m = sass.machine_counts("gemm", {"M": 1024, "N": 1024, "K": 1024}, knobs)   # m.ncu, m.per_pc, m.sass_hash
"""
from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass, field

from .emulator import CLASSES, EmulationError, Machine, Misaligned
from .explain import explain
from .launch import Launch, launches
from .parse import Kernel, parse
from .toolchain import ToolchainError, compile_cubin, disassemble, sass_hash

LANES = 1 << 20                 # lanes emulated at once (a chunk of blocks); bounds the memory of one chunk

NCU = {"global_ld": "smsp__inst_executed_op_global_ld.sum", "global_st": "smsp__inst_executed_op_global_st.sum",
       "shared_ld": "smsp__inst_executed_op_shared_ld.sum", "shared_st": "smsp__inst_executed_op_shared_st.sum",
       "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "ldgsts": "smsp__inst_executed_op_ldgsts.sum",
       "local_ld": "smsp__inst_executed_op_local_ld.sum", "local_st": "smsp__inst_executed_op_local_st.sum"}

__all__ = ["EmulationError", "Misaligned", "ToolchainError", "Compiled", "MachineCounts", "compiled", "explain", "machine_counts",
           "NCU"]


@dataclass(frozen=True)
class Compiled:
    """One schedule's device code as the GPU runs it."""
    cuda: str
    cubin: bytes
    listing: str                # nvdisasm -c
    sass_hash: str
    kernels: dict               # name -> parse.Kernel
    launches: tuple[Launch, ...]


@dataclass(frozen=True)
class MachineCounts:
    ncu: dict                   # Nsight Compute metric -> count, from the emulated SASS
    instructions: dict          # class (global_ld, shared_st, local_ld, ...) -> warp instructions
    per_tensor: dict            # tensor -> class -> warp instructions (global accesses, by the lanes' addresses)
    per_pc: dict                # kernel -> {pc: warp instructions executed}
    per_pc_sectors: dict        # kernel -> {pc: global load sectors}
    pc_tensor: dict             # kernel -> {pc: tensor} for global accesses
    sass_hash: str
    seconds: float
    kernels: tuple[str, ...] = field(default=())


@functools.lru_cache(maxsize=64)
def _compiled(op: str, shape_items: tuple, knobs) -> Compiled:
    from .. import build, traffic
    shape = dict(shape_items)
    cuda = build.source(op, shape, knobs, "cuda", "cuda")
    cubin = compile_cubin(cuda)
    listing = disassemble(cubin)
    ks = parse(listing)
    ls = launches(cuda, traffic.lowered(op, shape, knobs, "cuda"), traffic.tensor_shapes(op, shape))
    missing = [ln.name for ln in ls if ln.name not in ks]
    if missing:
        raise EmulationError(f"the cubin holds no kernel named {missing[0]}")
    return Compiled(cuda, cubin, listing, sass_hash(cubin), ks, tuple(ls))


def compiled(op: str, shape: dict, knobs) -> Compiled:
    return _compiled(op, tuple(shape.items()), knobs)


def chunks(launch: Launch):
    per = max(1, LANES // launch.threads)
    return [(b, min(b + per, launch.blocks)) for b in range(0, launch.blocks, per)]


@dataclass
class _Totals:
    counts: Counter = field(default_factory=Counter)
    sectors: int = 0
    per_pc: Counter = field(default_factory=Counter)
    per_pc_sectors: Counter = field(default_factory=Counter)
    pc_tensor: dict = field(default_factory=dict)


def emulate(kernel: Kernel, launch: Launch, progress=None, tracer=None) -> _Totals:
    """One launch's counts, chunk by chunk (blocks never talk to each other, so chunks add up)."""
    t = _Totals()
    parts = chunks(launch)
    for j, (b0, b1) in enumerate(parts):
        m = Machine(kernel, launch, b0, b1, tracer)
        m.run()
        t.counts.update(m.counts)
        t.sectors += m.sectors
        t.per_pc.update(m.per_pc)
        t.per_pc_sectors.update(m.per_pc_sectors)
        t.pc_tensor.update(m.pc_tensor)
        if progress:
            progress((j + 1) / len(parts))
    return t


_DONE: dict = {}                # (op, shape, knobs) -> MachineCounts, the newest 64


def machine_counts(op: str, shape: dict, knobs, progress=None) -> MachineCounts:
    """The emulated SASS's counts for one schedule; `progress(fraction)` is called as chunks finish."""
    key = (op, tuple(shape.items()), knobs)
    if key not in _DONE:
        _DONE[key] = _known(op, shape, knobs) or _machine_counts(op, key[1], knobs, progress)
        while len(_DONE) > 64:
            _DONE.pop(next(iter(_DONE)))
    return _DONE[key]


def _known(op: str, shape: dict, knobs) -> MachineCounts | None:
    """The counts already made: this process's, or the shipped ones while they hold (kernels.sass.shipped)."""
    from . import shipped
    key = (op, tuple(shape.items()), knobs)
    if key in _DONE:
        return _DONE[key]
    return shipped.lookup(op, shape, knobs, _compiled(op, key[1], knobs).sass_hash) if shipped.entries() else None


def _machine_counts(op, shape_items, knobs, progress):
    t0 = time.perf_counter()
    c = _compiled(op, shape_items, knobs)
    total, sectors, per_pc, per_pc_sectors, pc_tensor = Counter(), 0, {}, {}, {}
    per_tensor: dict = {}
    n = len(c.launches)
    for j, ln in enumerate(c.launches):
        cb = (lambda f, j=j: progress((j + f) / n)) if progress else None
        k = c.kernels[ln.name]
        t = emulate(k, ln, cb)
        total.update(t.counts)
        sectors += t.sectors
        per_pc[ln.name], per_pc_sectors[ln.name], pc_tensor[ln.name] = \
            dict(t.per_pc), dict(t.per_pc_sectors), dict(t.pc_tensor)
        for ins in k.instrs:
            cls = CLASSES.get(ins.opcode)
            if ins.pc in t.pc_tensor and cls:
                d = per_tensor.setdefault(t.pc_tensor[ins.pc], {})
                d[cls] = d.get(cls, 0) + int(t.per_pc.get(ins.pc, 0))
    inst = {k: int(total.get(k, 0)) for k in NCU if k != "sectors"}
    ncu = {NCU[k]: v for k, v in inst.items()}
    ncu[NCU["sectors"]] = int(sectors)
    return MachineCounts(ncu=ncu, instructions=inst, per_tensor=per_tensor, per_pc=per_pc,
                         per_pc_sectors=per_pc_sectors, pc_tensor=pc_tensor, sass_hash=c.sass_hash,
                         seconds=time.perf_counter() - t0, kernels=tuple(ln.name for ln in c.launches))
