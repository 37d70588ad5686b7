"""How a schedule's kernels are launched: grid and block sizes (from the lowered TensorIR), parameters and
their constant-bank offsets (from the CUDA signature), and realistic device addresses for each tensor."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

PARAM_BASE = 0x210              # sm_90: kernel parameters start here in constant bank 0
HEAP = 0x7F3A_0000_0000         # where the first tensor is placed: a typical device address on Linux
ALIGN = 2 << 20                 # the allocator hands out 2 MiB-aligned blocks (256-byte alignment and more)


@dataclass(frozen=True)
class Param:
    name: str                   # the CUDA parameter (A_ptr)
    tensor: str                 # the tensor it points to (A), "" for a scalar
    offset: int                 # its constant-bank offset
    size: int                   # bytes in the constant bank (8 for a pointer)
    base: int                   # device address the emulator gives the tensor
    nbytes: int                 # the tensor's bytes
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class Launch:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[Param, ...]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


_SIG = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\((\d+)(?:, *\d+)?\) )?(\w+)\(([^)]*)\)\s*\{')


def signatures(cuda: str) -> list[tuple[str, int | None, list[tuple[str, str]]]]:
    """(kernel, launch bound, [(C type, parameter name)]) of each kernel defined in the source, in order."""
    out = []
    for m in _SIG.finditer(cuda):
        params = []
        for p in filter(None, (x.strip() for x in m.group(3).split(","))):
            name = p.split()[-1]
            params.append((p[:-len(name)].strip(), name))
        out.append((m.group(2), int(m.group(1)) if m.group(1) else None, params))
    return out


def launch_dims(func) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """(grid, block) of each kernel of a lowered PrimFunc, in launch order."""
    from .._tirpy import children, thread_extent
    out = []

    def dims(s, acc):
        te = thread_extent(s)
        if te:
            acc[te[0]] = te[2]
        for c in children(s):
            dims(c, acc)

    def walk(s):
        te = thread_extent(s)
        if te and te[0].startswith("blockIdx"):
            acc: dict = {}
            dims(s, acc)
            out.append((tuple(acc.get(f"blockIdx.{a}", 1) for a in "xyz"),
                        tuple(acc.get(f"threadIdx.{a}", 1) for a in "xyz")))
            return
        for c in children(s):
            walk(c)
    walk(func.body)
    return out


def workspaces(func) -> dict[str, tuple[int, ...]]:
    """Global buffers the schedule allocates outside every kernel (split-K's partial sums, C_rf), by the name
    their pointer parameter takes in the CUDA source (C.rf -> C_rf): the operator's TE graph does not hold them."""
    from .._tirpy import children, scope_of, thread_extent
    out = {}

    def walk(s):
        if thread_extent(s):
            return
        if type(s).__name__ == "AllocBuffer" and scope_of(s.buffer) == "global":
            if s.buffer.dtype != "float32":
                raise ValueError(f"{s.buffer.name}: a {s.buffer.dtype} workspace, only float32 is placed here")
            out[s.buffer.name.replace(".", "_")] = tuple(int(d) for d in s.buffer.shape)
        for c in children(s):
            walk(c)
    walk(func.body)
    return out


def launches(cuda: str, func, tensors: dict[str, tuple[int, ...]]) -> list[Launch]:
    """Every kernel's launch, with each pointer parameter placed at its own aligned device address."""
    sigs, grids = signatures(cuda), launch_dims(func)
    tensors = {**workspaces(func), **tensors}
    if len(sigs) != len(grids):
        raise ValueError(f"the CUDA source defines {len(sigs)} kernels, the lowered TensorIR launches {len(grids)}")
    bases: dict[str, int] = {}
    nxt = HEAP
    out = []
    for (name, bound, params), (grid, block) in zip(sigs, grids):
        if bound is not None and bound != block[0] * block[1] * block[2]:
            raise ValueError(f"{name}: launch bound {bound} but {block} threads in the TensorIR")
        off, ps = PARAM_BASE, []
        for ctype, pname in params:
            size = 8 if "*" in ctype else 4
            off = -(-off // size) * size
            tensor = re.sub(r"_ptr$", "", pname) if size == 8 else ""
            shape = tuple(tensors.get(tensor, ()))
            nbytes = 4 * int(np.prod(shape)) if shape else 0
            if tensor and tensor not in bases:
                bases[tensor] = nxt
                nxt += -(-max(nbytes, 1) // ALIGN) * ALIGN
            ps.append(Param(pname, tensor, off, size, bases.get(tensor, 0), nbytes, shape))
            off += size
        out.append(Launch(name, grid, block, tuple(ps)))
    return out
