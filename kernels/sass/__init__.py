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

from .emulator import EmulationError, Machine
from .launch import Launch, launches
from .parse import Kernel, parse
from .toolchain import ToolchainError, compile_cubin, disassemble, sass_hash

LANES = 1 << 20                 # lanes emulated at once (a chunk of blocks); bounds the memory of one chunk

NCU = {"global_ld": "smsp__inst_executed_op_global_ld.sum", "global_st": "smsp__inst_executed_op_global_st.sum",
       "shared_ld": "smsp__inst_executed_op_shared_ld.sum", "shared_st": "smsp__inst_executed_op_shared_st.sum",
       "sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "ldgsts": "smsp__inst_executed_op_ldgsts.sum",
       "local_ld": "smsp__inst_executed_op_local_ld.sum", "local_st": "smsp__inst_executed_op_local_st.sum"}

__all__ = ["EmulationError", "ToolchainError", "Compiled", "MachineCounts", "compiled", "machine_counts", "NCU"]


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
    per_pc: dict                # kernel -> {pc: warp instructions executed}
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


def emulate(kernel: Kernel, launch: Launch, progress=None, tracer=None) -> tuple[Counter, int, Counter]:
    """(instruction classes, global load sectors, warp instructions per pc) of one launch, chunk by chunk."""
    counts, sectors, per_pc = Counter(), 0, Counter()
    parts = chunks(launch)
    for j, (b0, b1) in enumerate(parts):
        m = Machine(kernel, launch, b0, b1, tracer)
        m.run()
        counts.update(m.counts)
        sectors += m.sectors
        per_pc.update(m.per_pc)
        if progress:
            progress((j + 1) / len(parts))
    return counts, sectors, per_pc


def machine_counts(op: str, shape: dict, knobs, progress=None) -> MachineCounts:
    return _machine_counts(op, tuple(shape.items()), knobs, progress)


def _machine_counts(op, shape_items, knobs, progress):
    t0 = time.perf_counter()
    c = _compiled(op, shape_items, knobs)
    total, sectors, per_pc = Counter(), 0, {}
    n = len(c.launches)
    for j, ln in enumerate(c.launches):
        cb = (lambda f, j=j: progress((j + f) / n)) if progress else None
        counts, s, pp = emulate(c.kernels[ln.name], ln, cb)
        total.update(counts)
        sectors += s
        per_pc[ln.name] = dict(pp)
    inst = {k: int(total.get(k, 0)) for k in NCU if k != "sectors"}
    ncu = {NCU[k]: v for k, v in inst.items()}
    ncu[NCU["sectors"]] = int(sectors)
    return MachineCounts(ncu=ncu, instructions=inst, per_pc=per_pc, sass_hash=c.sass_hash,
                         seconds=time.perf_counter() - t0, kernels=tuple(ln.name for ln in c.launches))
