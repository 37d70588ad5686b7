"""The static instruction mix of a schedule's cubin: the machine code counted as listed, not emulated (no
kernels.sass emulator code: its counts do not depend on this file)."""
from __future__ import annotations

from collections import Counter

from .parse import parse
from .toolchain import compile_cubin, disassemble, local_bytes


def mix(op: str, shape: dict, knobs) -> dict:
    """The static instruction mix of a schedule's cubin (every kernel's instructions once, as nvdisasm lists
    them; no emulation): how many instructions, multiply-adds (FFMA) and their share, branches, shared, global
    and local loads, and the bytes of local memory a thread. Where a loop is unrolled its body dominates the
    listing, so the share of multiply-adds says how much of the issue rate goes to the arithmetic: over the 24
    conv1d settings measured on the H200 at 2^20 x 1024 it follows their times (data/cpu_conv1d_mix.json)."""
    from .. import build
    cubin = compile_cubin(build.source(op, dict(shape), knobs, "cuda", "cuda"))
    return counted(parse(disassemble(cubin)), cubin)


def counted(kernels: dict, cubin: bytes) -> dict:
    """mix() of a cubin already compiled and parsed (kernel name -> parse.Kernel)."""
    every = [ins for k in kernels.values() for ins in k.instrs]
    ops = Counter(ins.opcode for ins in every)
    lds = [ins for ins in every if ins.opcode == "LDS"]
    n = sum(ops.values())
    return {"instructions": n, "ffma": ops["FFMA"], "ffma_share": round(ops["FFMA"] / max(n, 1), 4),
            "branches": ops["BRA"], "shared_ld": ops["LDS"],
            # LDS.128; and `@!PT LDS RZ, [RZ]`, which never loads (its guard is never true) but is issued, and
            # which Nsight Compute's shared-load instruction count includes: nvcc puts three beside each 4-byte
            # cp.async (LDGSTS.E)
            "shared_ld_128": sum("128" in ins.mods for ins in lds),
            "shared_ld_never": sum(ins.guard == "PT" and ins.guard_not for ins in lds),
            "global_ld": ops["LDG"], "local_ld": ops["LDL"], "local_bytes": local_bytes(cubin)}
