"""Why the machine's counts differ from what the TensorIR asks for, in words read off the SASS."""
from __future__ import annotations

from .emulator import CLASSES, _bytes


def _instrs(compiled, machine):
    """(instruction, warps that executed it, tensor it touches) for every executed memory instruction."""
    for name, k in compiled.kernels.items():
        per_pc, tensors = machine.per_pc.get(name, {}), machine.pc_tensor.get(name, {})
        for ins in k.instrs:
            n = per_pc.get(ins.pc, 0)
            if n and ins.opcode in CLASSES:
                yield ins, n, tensors.get(ins.pc, "")


def explain(asked: dict, machine, compiled) -> list[str]:
    """Sentences for each difference between the TensorIR's warp-level accesses (`asked`: tensor -> level ->
    read/write) and the emulated SASS (`machine`: a MachineCounts)."""
    out = []
    ins = list(_instrs(compiled, machine))
    for t in sorted(asked):
        lv = asked[t].get("global", {})
        mt = machine.per_tensor.get(t, {})
        want, got = lv.get("read", 0), mt.get("global_ld", 0) + mt.get("ldgsts", 0)
        widths = sorted({_bytes(i) * 8 for i, _, tt in ins if tt == t and i.opcode in ("LDG", "LDGSTS")})
        if want and got != want:
            why = (f"nvcc merged neighbouring floats into {'- and '.join(map(str, widths))}-bit loads"
                   if got < want and widths and max(widths) > 32 else
                   "nvcc loads an address it already holds once (the loop it unrolled reuses it)" if got < want else
                   "nvcc issues some of these loads in more than one branch, or ahead of a branch with the "
                   "predicate off")
            out.append(f"{t}: the TensorIR asks for {want:,} warp-level reads from global memory, the SASS "
                       f"executes {got:,}: {why}.")
        if mt.get("ldgsts"):
            out.append(f"{t}: its copies into shared memory are cp.async (LDGSTS): {mt['ldgsts']:,} warp "
                       "instructions that read global memory and write shared memory at once, counted as "
                       "LDGSTS, neither as global loads nor as shared stores.")
        want, got = lv.get("write", 0), mt.get("global_st", 0)
        if want and got != want:
            why = ("nvcc keeps the running value in registers and stores it once" if got < want else
                   "nvcc stores in more than one branch")
            out.append(f"{t}: the TensorIR asks for {want:,} warp-level writes to global memory, the SASS "
                       f"executes {got:,}: {why}.")
    ld, st = machine.instructions.get("local_ld", 0), machine.instructions.get("local_st", 0)
    if ld or st:
        spill = any(i.note == "SpillRefill" for i, _, _ in ins if i.opcode in ("LDL", "STL"))
        out.append(f"Local memory: the SASS loads from it {ld:,} times and stores to it {st:,} times (warp "
                   "level), a level the TensorIR does not have: "
                   + ("nvcc ran out of registers and spilled values there" if spill else
                      "a per-thread array indexed at run time cannot live in registers, so nvcc placed it in "
                      "local memory (device memory, cached in L1)") + ".")
    fences = sum(n for i, n, _ in ins if i.opcode == "LDS" and i.guard == "PT" and i.guard_not)
    if fences:
        out.append(f"{fences:,} of the {machine.instructions.get('shared_ld', 0):,} shared loads are "
                   "`@!PT LDS RZ, [RZ]`, which nvcc puts before cp.async copies: executed, counted, and they "
                   "move no data.")
    sh_want = sum(a.get("shared", {}).get("read", 0) for a in asked.values())
    sh_got = machine.instructions.get("shared_ld", 0) - fences
    wide = sorted({_bytes(i) * 8 for i, _, _ in ins if i.opcode == "LDS" and _bytes(i) > 4})
    if sh_want and sh_got < sh_want and wide:
        out.append(f"Shared memory: the TensorIR asks for {sh_want:,} warp-level reads, the SASS executes "
                   f"{sh_got:,} (without fences): nvcc merged reads of neighbouring floats into "
                   f"{'- and '.join(map(str, wide))}-bit LDS.")
    zeros = sum(n for i, n, _ in ins if i.opcode == "STS" and i.ops and i.ops[-1].name == "RZ")
    if zeros:
        out.append(f"{zeros:,} shared stores write zeros (STS of RZ): where a copy would read past a tensor's "
                   "edge, the predicated cp.async is replaced by a store of zeros.")
    return out
