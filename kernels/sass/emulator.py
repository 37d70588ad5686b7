"""A warp-level SASS emulator for control flow and addresses.

Every lane of a chunk of the grid's blocks is one element of numpy arrays; the chunk runs as one SIMT machine whose
lanes may sit at different instructions: groups (instruction, lanes) run lowest address first, and several groups may
wait at one instruction. Groups of different warps merge where they meet (which changes no count); lanes of one warp
that diverged run apart, each group executing (and counting) the shared code on its own, until they meet at a
convergence point, BSYNC, WARPSYNC or BAR, as the hardware's do (nvcc lays a divergent region out between its BSSY and
BSYNC; a BSYNC joins only lanes that executed its barrier's BSSY together, so groups that split before the BSSY pass
the BSYNC apart): a group that arrives at, or branches to, any other instruction where a group of its warp waits stays
apart from it. Merging wherever a warp's groups met undercounted held-out kernels whose branches jump past a BSYNC to
the next (batch 843420274: dwsep_conv2d-8 442,250 global loads and stores short, three others short by up to 1.2%);
kept apart, all four count exactly what Nsight Compute read (dwsep_conv2d-8 was still 500 local loads short of 4.07
million while a branch's taken lanes joined a group of their warp already waiting at the target). Integer and predicate
arithmetic, the uniform datapath, special and constant-bank registers, branches (BRA.U: a warp branches only where all
its active lanes would), EXIT and barriers are executed; floating point is not: its results, and every value loaded
from memory, are Unknown. A branch, guard or address that would need an Unknown stops the run with a sentence. A
register written under a guard or by diverged lanes may be known in some lanes and Unknown in others (Mixed): integer
and predicate instructions, which compute each lane from its own operands, carry the known lanes through and make the
result Unknown in the others only, so that a pointer loaded into a register under a guard (@!UP0 ULDC.64 UR6,
c[0x0][0x210] over a float weight read from shared memory, copied with MOV R70, UR6, offset with @!UP0 IMAD.WIDE) still
addresses a store under that guard (held-out dwconv2d-26, batch 1481437295, whose store stopped the run while a copy
took a register's unknown lanes for the whole register). Memory instructions (their addresses) and VOTEU (across lanes)
read only what is known in every active lane.

Counts follow Nsight Compute: an instruction executed by a warp counts once for that warp whenever any of
its lanes reaches it, whether or not its guard predicate is on; a global load's sectors are the distinct
32-byte sectors of its active lanes, per request (a whole warp for 32-bit accesses, 16 lanes for 64-bit,
8 for 128-bit: 128 bytes a request).
"""
from __future__ import annotations

import re
from collections import Counter

import numpy as np

from .launch import Launch
from .parse import Instr, Kernel, Op
from .values import B32, M32, Bits, Lanes, Mixed, Uninit, Unknown, make, merge, pred_not, select, z64

WARP = 32
CONVERGE = ("BSYNC", "WARPSYNC", "BAR")      # where the diverged lanes of a warp wait for one another
ALL = "all"                     # a mask: every lane of the chunk
LOCAL_TOP = 0xFFFDC0            # c[0x0][0x28]: the local-memory stack top each thread starts from
CLASSES = {"LDG": "global_ld", "STG": "global_st", "LDS": "shared_ld", "LDSM": "shared_ld", "STS": "shared_st",
           "LDGSTS": "ldgsts", "LDL": "local_ld", "STL": "local_st"}
_PRED = re.compile(r"U?P[0-6T]")       # a predicate register
UNSUPPORTED = {"CALL", "RET", "BRX", "JMX", "JMP", "ATOM", "ATOMG", "ATOMS", "RED", "BRA.DIV"}
# The run's memo (results remembered per operand pair, each holding its operands' lane arrays) is emptied, and
# the freed heap handed back, when the process has grown this much since the chunk started or since the memo
# was last emptied: a fused depthwise-separable kernel of 1024-thread blocks (held-out dwsep_conv2d-16, batch
# 3984747587) made a new entry for every address of its unrolled body, about 200 MB a second, until the system
# killed the run at 24 GB. Emptying it changes no count, only what is computed again.
MEMO_GROWTH = 2 << 30
MEMO_CHECK = 1024               # instructions between two looks at the process's size


def _trim() -> None:
    """Hands the freed heap back to the system (glibc): without it the memory of an emptied memo stays with the
    process, and the next memo grows past it (2.6 GB emptied left 2.6 GB resident; trimmed, 0.3 GB)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _resident() -> int:
    """The process's resident bytes now (Linux); 0 where /proc is not there, which never empties the memo."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096
    except (OSError, ValueError, IndexError):
        return 0


class Misaligned(RuntimeError):
    """The kernel would fault on the GPU: a lane's address is not a multiple of its access width."""


class EmulationError(RuntimeError):
    """The emulator met something it does not compute; the message is one sentence."""


def _bytes(ins: Instr) -> int:
    for m in ins.mods:
        if m in ("64", "128"):
            return int(m) // 8
        if m in ("U8", "S8"):
            return 1
        if m in ("U16", "S16"):
            return 2
    return 4


class Machine:
    """One chunk of blocks [b0, b1) of one kernel launch."""

    copy_rule = "lines"     # copy_sectors' rule for 128-bit copies, one of COPY_RULES
    bsync_tokens = True     # a BSYNC joins only the lanes that executed its BSSY together (off: every group there)
    unanimous_bra = True    # a warp takes BRA.U only where all its active lanes would (off: each lane on its own)
    branch_operand = True   # `@!P0 BRA P2, L` branches where the guard and P2 both hold (off: on the guard alone)
    spill_slots = True      # a local store at per-lane addresses forgets the spill slots in its lanes' range only
    #                         (off: no local value is known after it, so a later spill reload is Unknown)

    def __init__(self, kernel: Kernel, launch: Launch, b0: int, b1: int, tracer=None):
        self.k, self.launch, self.tracer = kernel, launch, tracer
        T = launch.threads
        self.T, self.nb = T, b1 - b0
        self.n = self.nb * T
        t = np.tile(np.arange(T, dtype=np.int64), self.nb)
        b = np.repeat(np.arange(b0, b1, dtype=np.int64), T)
        bx, by, _ = launch.block
        gx, gy, _ = launch.grid
        self.sreg = {"SR_TID.X": t % bx, "SR_TID.Y": (t // bx) % by, "SR_TID.Z": t // (bx * by),
                     "SR_CTAID.X": b % gx, "SR_CTAID.Y": (b // gx) % gy, "SR_CTAID.Z": b // (gx * gy),
                     "SR_LANEID": t % WARP, "SR_CgaCtaId": 0}
        self.tid, self.block = t, b
        W = -(-T // WARP)
        self.warps = self.nb * W
        self.warp_starts = np.flatnonzero(t % WARP == 0)
        self.regs: dict = {}
        self.cbank = {0x0: launch.block[0], 0x4: launch.block[1], 0x8: launch.block[2],
                      0xC: launch.grid[0], 0x10: launch.grid[1], 0x14: launch.grid[2], 0x28: LOCAL_TOP}
        for p in launch.params:
            if p.size == 8:
                self.cbank[p.offset], self.cbank[p.offset + 4] = p.base & M32, p.base >> 32
        self.local: dict = {}           # uniform local address -> value (spills)
        self.local_lost = False         # spill_slots off, after a local store at per-lane addresses
        self.counts: Counter = Counter()
        self.sectors = 0
        self.per_pc: Counter = Counter()
        self.per_pc_sectors: Counter = Counter()
        self.pc_tensor: dict = {}       # pc of a global access -> the tensor its lanes touch
        self._memo: dict = {}
        self.pending: dict = {}         # index -> the groups (masks) of lanes waiting there, never empty
        self.barriers: dict = {}        # B0..B15 -> each lane's token: which execution of BSSY it was last part of
        self.bssy_runs = 0
        self.mask = ALL                 # the lanes of the instruction being executed
        self.lenient = False            # the handler running computes each lane from that lane's operands only
        self.taint = None               # its active lanes that read a Mixed operand's unknown part (lenient)
        self.taint_why = ""

    # ------------------------------------------------------------------ masks
    def nwarps(self, mask) -> int:
        if mask is ALL:
            return self.warps
        key = ("w", id(mask))
        hit = self._memo.get(key)
        if hit is None or hit[0] is not mask:
            hit = (mask, int(np.logical_or.reduceat(mask, self.warp_starts).sum()))
            self._memo[key] = hit
        return hit[1]

    def _and(self, mask, p):
        if p is True:
            return mask
        if p is False:
            return False
        if mask is ALL:
            return p
        key = ("and", id(mask), id(p))
        hit = self._memo.get(key)
        if hit is None or hit[0] is not mask or hit[1] is not p:
            hit = (mask, p, mask & p)
            self._memo[key] = hit
        return hit[2]

    @staticmethod
    def _empty(m) -> bool:
        return m is False or (m is not ALL and m is not True and not m.any())

    @staticmethod
    def _or(a, b):
        if a is ALL or b is ALL:
            return ALL
        return a | b

    def _warps(self, m) -> np.ndarray:
        """Which warps a group of lanes has lanes in."""
        if m is ALL or m is True:
            return np.ones(len(self.warp_starts), bool)
        return np.logical_or.reduceat(m, self.warp_starts)

    def _unanimous(self, mask, g) -> np.ndarray:
        """BRA.U's condition: each lane's warp takes the branch only where every one of its active lanes would
        (nvcc guards a divergent region as `@P BRA.U L; BSSY B, L; ...; @P BRA L'` so that a warp whose lanes all
        skip it skips its BSSY too; a warp whose lanes disagree falls through as one, and the region's own branch
        splits it. Taken per lane, lanes 13 to 15 of held-out gemm-8 of batch 1045639025 jumped ahead of their
        warp, which then ran a loop as two groups: 1,449 shared loads and 724 LDGSTS more than the H100 counted)."""
        active = np.ones(self.n, bool) if mask is ALL or mask is True else mask
        split = np.logical_or.reduceat(active & ~g, self.warp_starts)
        return ~np.repeat(split, np.diff(np.append(self.warp_starts, self.n)))

    def _share(self, a, b) -> bool:
        """Whether two groups of lanes have a warp in common."""
        if a is ALL or b is ALL or a is True or b is True:
            return True
        return bool((self._warps(a) & self._warps(b)).any())

    def _full(self, m):
        return ALL if m is ALL or m is True or bool(m.all()) else m

    # ---------------------------------------------------------- lane groups
    def _converges(self, i: int) -> bool:
        return i < len(self.k.instrs) and self.k.instrs[i].opcode in CONVERGE

    def _meet(self, i: int, a, b) -> bool:
        """Whether the groups a and b, both at instruction i, run on as one: groups of different warps always
        (which changes no count); a warp's diverged groups only at a convergence point, and at a BSYNC only
        where they executed its barrier's BSSY together (the hardware's BSSY records the mask of the lanes that
        execute it; BSYNC waits for those alone: groups that diverged before the BSSY, each executing it on
        its own, pass their BSYNC apart and stay so until a convergence point they share; held-out
        dwsep_conv2d-12 of batch 2288257967, 14,535 warp-executions of a loop body short before)."""
        if not self._share(a, b):
            return True
        if not self._converges(i):
            return False
        ins = self.k.instrs[i]
        tok = self.barriers.get(ins.ops[0].name) if ins.opcode == "BSYNC" and ins.ops and self.bsync_tokens else None
        if tok is None:
            return True
        u = self._or(a, b)
        u = np.ones(self.n, bool) if u is ALL or u is True else u
        lo = np.minimum.reduceat(np.where(u, tok, np.iinfo(np.int64).max), self.warp_starts)
        hi = np.maximum.reduceat(np.where(u, tok, -1), self.warp_starts)
        shared = self._warps(a) & self._warps(b)
        return bool((lo[shared] == hi[shared]).all())

    def bssy(self, name: str, mask) -> None:
        """BSSY: the lanes of the group executing it are the barrier's lanes (one token per execution)."""
        self.bssy_runs += 1
        tok = self.barriers.get(name)
        if tok is None:
            tok = self.barriers[name] = np.zeros(self.n, np.int64)
        if mask is ALL or mask is True:
            tok[:] = self.bssy_runs
        else:
            tok[mask] = self.bssy_runs

    def _wait(self, i: int, m) -> None:
        """The group m waits at instruction i: it joins a group waiting there that it meets (`_meet`), else it
        waits there apart."""
        groups = self.pending.get(i)
        if groups is None:
            self.pending[i] = [m]
            return
        for j, g in enumerate(groups):
            if self._meet(i, g, m):
                groups[j] = self._or(g, m)
                return
        groups.append(m)

    def _take(self, i: int):
        """One group waiting at instruction i, which no longer waits."""
        groups = self.pending[i]
        m = groups.pop(0)
        if not groups:
            del self.pending[i]
        return m

    def _join(self, i: int, m):
        """The group m arrives at instruction i: the groups waiting there that it meets (`_meet`) join it (the
        rest wait on)."""
        groups = self.pending.pop(i)
        rest = []
        for g in groups:
            if self._meet(i, m, g):
                m = self._or(m, g)
            else:
                rest.append(g)
        if rest:
            self.pending[i] = rest
        return self._full(m) if len(rest) < len(groups) else m

    # -------------------------------------------------------------- operands
    def fail(self, ins: Instr, what: str):
        raise EmulationError(f"{self.k.name}, instruction /*{ins.pc:04x}*/ {ins.text}: {what}")

    def reg(self, name: str):
        if name in ("RZ", "URZ"):
            return 0
        v = self.regs.get(name)
        if v is None:
            return Uninit(f"{name} before anything was written to it")
        return self._resolve(v)

    def _resolve(self, v):
        """A Mixed value as the current lanes see it: its known part if none of them holds the unknown one
        (and a Bits value whose every bit is known in the current lanes, as a plain value). While a lane-wise
        handler runs (self.lenient), a Mixed operand gives its known part all the same and its unknown lanes
        are noted in self.taint: what the handler writes is Unknown in those lanes (see put)."""
        if isinstance(v, Bits) and isinstance(v.known, np.ndarray):
            k = v.known if self.mask is ALL else v.known[self.mask]
            return make(v.value) if bool((k == M32).all()) else v
        if not isinstance(v, Mixed):
            return v
        m = self.mask
        t = v.unk if m is ALL else (v.unk & m)
        if not t.any():
            return v.known
        if not self.lenient:
            return Unknown(v.why)
        if self.taint is None:
            self.taint, self.taint_why = t, v.why
        else:
            self.taint = self.taint | t
        return v.known

    def val(self, ins: Instr, o: Op):
        if o.kind == "reg":
            v = self.reg(o.name)
            if isinstance(v, Unknown):
                return v
            if o.inv:
                return make(~z64(v))
            if o.neg:
                return make(-z64(v))
            return v
        if o.kind == "imm":
            return o.value & M32
        if o.kind == "cbank":
            off = o.value
            for r in o.regs:
                rv = self.reg(r)
                if not isinstance(rv, int):
                    self.fail(ins, "a constant-bank read at a per-lane or unknown offset is not emulated")
                off += rv
            if o.name == "0x0" and off in (0x208, 0x20C):    # the global memory descriptor (desc[UR..])
                return Unknown("the global memory descriptor")
            if o.name != "0x0" or off not in self.cbank:
                self.fail(ins, f"the constant c[{o.name}][{off:#x}] is not one the emulator knows "
                               "(launch sizes, parameters, the local stack)")
            return self.cbank[off]
        return Unknown(f"the operand {o.text}")

    def pred(self, o: Op):
        if o.name in ("PT", "UPT"):
            v = True
        else:
            v = self._resolve(self.regs.get(o.name, False))
        if isinstance(v, Unknown):
            return v
        return pred_not(v) if o.not_ else v

    def guard(self, ins: Instr):
        if not ins.guard:
            return True
        v = True if ins.guard in ("PT", "UPT") else self._resolve(self.regs.get(ins.guard, False))
        if isinstance(v, Unknown):
            return v
        return pred_not(v) if ins.guard_not else v

    def pair(self, name: str):
        """(low, high) values of the register pair starting at name."""
        if name in ("RZ", "URZ"):
            return 0, 0
        pre, num = ("UR", name[2:]) if name.startswith("UR") else ("R", name[1:])
        return self.reg(name), self.reg(f"{pre}{int(num) + 1}")

    # ---------------------------------------------------------------- writes
    def put(self, name: str, v, wmask):
        if name in ("RZ", "URZ", "PT", "UPT"):
            return
        if self.taint is not None:      # lanes that computed from a Mixed operand's unknown part
            v = merge(self.taint, Unknown(self.taint_why), v)
        if isinstance(v, Bits) and name.startswith(("P", "UP")):   # a predicate is one bit, known or not
            v = Unknown(v.why)
        if wmask is True:
            self.regs[name] = v
            return
        old = self.regs.get(name)
        if wmask is False:
            return
        if old is None and not name.startswith(("P", "UP")):     # never written: the other lanes don't care
            self.regs[name] = v
            return
        if name.startswith(("P", "UP")) and not isinstance(v, (Unknown, Mixed)) and \
                not isinstance(old, (Unknown, Mixed)):
            old = False if old is None else old
            same = isinstance(v, bool) and isinstance(old, bool) and v == old
            self.regs[name] = v if same else np.where(wmask, v, old)
            return
        self.regs[name] = merge(wmask, v, old) if isinstance(v, (Unknown, Mixed)) or \
            isinstance(old, (Unknown, Mixed)) else select(wmask, v, old)

    def put_pair(self, name: str, lo, hi, wmask):
        pre, num = ("UR", name[2:]) if name.startswith("UR") else ("R", name[1:])
        self.put(name, lo, wmask)
        if name not in ("RZ", "URZ"):
            self.put(f"{pre}{int(num) + 1}", hi, wmask)

    # --------------------------------------------------------------- running
    def run(self):
        instrs, labels = self.k.instrs, self.k.labels
        i, mask = 0, ALL
        pending = self.pending
        handlers = _HANDLERS
        steps, ceiling = 0, _resident() + MEMO_GROWTH
        while True:
            steps += 1
            if steps % MEMO_CHECK == 0 and _resident() > ceiling:
                self._memo.clear()
                _trim()
                ceiling = _resident() + MEMO_GROWTH
            if mask is not None:
                if pending:
                    lo = min(pending)
                    if lo < i:
                        self._wait(i, mask)
                        i, mask = lo, self._take(lo)
                    elif lo == i:
                        mask = self._join(i, mask)
            elif pending:
                i = min(pending)
                mask = self._take(i)
            else:
                return
            if i >= len(instrs):
                raise EmulationError(f"{self.k.name}: ran past the last instruction")
            ins = instrs[i]
            self.mask = mask
            nw = self.nwarps(mask)
            self.per_pc[ins.pc] += nw
            op = ins.opcode
            cls = CLASSES.get(op)
            if cls:
                self.counts[cls] += nw
            if op == "BRA":
                g = self.guard(ins)
                for o in ins.ops[:-1] if self.branch_operand else ():      # `@!P0 BRA P2, L`: the guard AND P2
                    if o.kind == "reg" and _PRED.fullmatch(o.name) and not isinstance(g, Unknown):
                        g = _ops._bool_op("AND", g, self.pred(o))
                target = labels[ins.ops[-1].name]
                if isinstance(g, Unknown):
                    self.fail(ins, f"the branch depends on {g.why}, which the emulator does not compute")
                if self.unanimous_bra and "U" in ins.mods and g is not True and g is not False:
                    g = self._unanimous(mask, g)
                taken = self._and(mask, g)
                if self._empty(taken):
                    i += 1
                    continue
                fall = self._and(mask, pred_not(g)) if g is not True else False
                if self._empty(fall):
                    i = target
                    continue
                self._wait(target, taken)
                i += 1
                mask = fall
                continue
            if op == "EXIT":
                g = self.guard(ins)
                if isinstance(g, Unknown):
                    self.fail(ins, f"the exit depends on {g.why}, which the emulator does not compute")
                rest = False if g is True else self._and(mask, pred_not(g))
                if self._empty(rest):
                    mask = None
                    continue
                mask, i = rest, i + 1
                continue
            if ins.full in UNSUPPORTED or op in UNSUPPORTED:
                self.fail(ins, f"{ins.full} is not emulated (a call, an indirect jump or an atomic)")
            h = handlers.get(op)
            if h is None:
                self.fail(ins, f"the opcode {ins.full} is not emulated")
            g = self.guard(ins)
            if isinstance(g, Unknown):
                if cls is None and op not in _NO_VALUE:
                    self.fail(ins, f"its guard depends on {g.why}, which the emulator does not compute")
                if cls in ("global_ld", "ldgsts") or self.tracer:
                    self.fail(ins, f"which lanes access memory depends on {g.why}, which the emulator does not "
                                   "compute")
                g = True                # counted all the same; what it writes becomes Unknown below
            wmask = self._and(mask, g) if pending else g
            if g is not True:           # only lanes whose guard is on read their operands
                self.mask = self._and(mask, g)
            if op in _STRICT:
                h(self, ins, mask, g, wmask)
            else:
                self.lenient = True
                try:
                    h(self, ins, mask, g, wmask)
                finally:
                    self.lenient, self.taint = False, None
            if self.tracer:
                self.tracer.after(self, ins, mask, g)
            i += 1

    # ----------------------------------------------------------- memory ops
    def address(self, ins: Instr, o: Op, wide: bool):
        """A memory operand's address: an int (every lane), a ('lazy', base, c) meaning base + c (global
        addresses whose lanes differ only through one Lanes value), or an int64 array."""
        parts = []
        for r in o.regs:
            if wide and r == o.regs[0] and o.wide:
                lo, hi = self.pair(r)
                if isinstance(lo, Unknown) or isinstance(hi, Unknown):
                    why = (lo if isinstance(lo, Unknown) else hi).why
                    self.fail(ins, f"its address depends on {why}, which the emulator does not compute")
                if isinstance(hi, Lanes):
                    if hi.bounds()[0] == hi.bounds()[1]:
                        hi = (hi.bounds()[0] + hi.off) & M32
                    else:
                        parts.append((z64(hi) << 32))
                        parts.append(z64(lo))
                        continue
                if isinstance(lo, Lanes):
                    w = lo.wrap()
                    if w is None:
                        parts.append((hi << 32) + z64(lo))
                    else:
                        parts.append(("lazy", lo.base, (hi << 32) + lo.off - w * B32))
                else:
                    parts.append((hi << 32) + lo)
            else:
                v = self.reg(r)
                if isinstance(v, Unknown):
                    self.fail(ins, f"its address depends on {v.why}, which the emulator does not compute")
                parts.append(v if isinstance(v, int) else ("lazy", v.base, v.off))
        total: object = o.value
        lazy = None
        for p in parts:
            if isinstance(p, tuple):
                if lazy is None and not isinstance(total, np.ndarray):
                    lazy = p
                    continue
                p = p[1].astype(np.int64) + p[2]
            total = total + p
        if not wide:
            if lazy is not None:
                total = lazy[1].astype(np.int64) + lazy[2] + total
                lazy = None
            return total & M32 if isinstance(total, int) else (total & M32)
        if lazy is not None:
            if isinstance(total, np.ndarray):
                return lazy[1].astype(np.int64) + lazy[2] + total
            return ("lazy", lazy[1], lazy[2] + total)
        return total

    def note_tensor(self, pc: int, addr, active) -> None:
        """Which kernel parameter's tensor a global access touches (read off its first active lane)."""
        if pc in self.pc_tensor or active is False:
            return
        lane = 0 if active is ALL or active is True else int(np.argmax(active))
        a = int(addr[1][lane]) + addr[2] if isinstance(addr, tuple) else \
            addr if isinstance(addr, int) else int(addr[lane])
        for p in self.launch.params:
            if p.tensor and p.base <= a < p.base + max(p.nbytes, 1):
                self.pc_tensor[pc] = p.tensor
                return
        self.pc_tensor[pc] = "?"

    def check_aligned(self, ins: Instr, addr, active, width: int, space: str) -> None:
        """A lane whose address is not a multiple of the access's width faults on the GPU ("misaligned
        address", which ends the process that launched it): say so, with the first such lane."""
        if width <= 1 or active is False:
            return
        mask = width - 1
        if isinstance(addr, int):
            bad = (addr & mask) != 0 and not self._empty(active)
            lane = 0 if active is ALL or active is True else int(np.argmax(active))
        else:
            if isinstance(addr, tuple):
                base, c = addr[1], addr[2]
                key = ("al", id(base), c & mask, width)
                hit = self._memo.get(key)
                if hit is None or hit[0] is not base:
                    hit = (base, (base.astype(np.int64) + (c & mask)) & mask)
                    self._memo[key] = hit
                low = hit[1]
            else:
                low = addr & mask
            off = low != 0
            if active is not ALL and active is not True:
                off = off & active
            bad = bool(off.any())
            lane = int(np.argmax(off)) if bad else 0
        if bad:
            t, b = int(self.tid[lane]), int(self.block[lane])
            raise Misaligned(f"{self.k.name}, instruction /*{ins.pc:04x}*/ {ins.text}: thread {t} of block {b} "
                             f"accesses {space} memory at an address that is not a multiple of {width} bytes; "
                             "the GPU stops the kernel with 'misaligned address'")

    def sectors_of(self, addr, active, width: int) -> int:
        """Distinct 32-byte sectors per request of the active lanes."""
        if active is False:
            return 0
        L = _lanes_per_request(width)
        if isinstance(addr, tuple):
            base, c = addr[1], addr[2]
            key = ("sec", id(base), c % 32, id(active) if active is not ALL else 0, width)
            hit = self._memo.get(key)
            if hit is not None and hit[0] is base and (active is ALL or hit[1] is active):
                return hit[2]
            a = base.astype(np.int64) + (c % 32)
            r = self._distinct(a >> 5, active, L)
            self._memo[key] = (base, active, r)
            return r
        if isinstance(addr, int) and (active is ALL or active is True):
            return self._requests_all(L)
        return self._distinct(self._sector_index(addr), active, L)

    def _requests_all(self, L: int) -> int:
        return int(np.ceil(self.T / L)) * self.nb

    def copy_sectors(self, gl, sh, active, width: int) -> int:
        """Global load sectors of an LDGSTS. A 128-bit copy counts, per request of 8 lanes, the distinct pairs of
        (128-byte line of global memory read, 32-byte block of shared memory written): each shared block is
        filled from each global line it takes bytes from. Found from the ninth held-out batch's four sector misses
        (seed 1649424385): two lanes reading 16 bytes each from two sectors of one line into one shared block count
        one (gemm-36, 48,756 fewer than the global sectors), a shared block taking bytes from two lines counts two
        (gemm-2, gemm-34, gemm-38, more than either); the same rule gives the four exactly, and every other of
        the 289 judged kernels with cp.async as before. Narrower copies count the global sectors they read.
        `copy_rule` picks another rule to compare with: "max" (the larger of the global sectors and the shared
        blocks, the rule judged by the ninth batch) or "global" (the global sectors alone)."""
        if width != 16 or active is False or self.copy_rule == "global":
            return self.sectors_of(gl, active, width)
        L = _lanes_per_request(width)
        g, s = self._sector_index(gl), self._sector_index(sh)
        if self.copy_rule == "max":
            return int(np.maximum(self._per_request(g, active, L), self._per_request(s, active, L)).sum())
        # a shared block index fits 16 bits (228 KB of shared memory is 7,296 blocks)
        return self._distinct((g >> 2) << 16 | (s & 0xFFFF), active, L)

    def _sector_index(self, addr) -> np.ndarray:
        """Each lane's 32-byte sector (or shared block) of an address as sectors_of takes it."""
        if isinstance(addr, tuple):
            return (addr[1].astype(np.int64) + addr[2]) >> 5
        if isinstance(addr, int):
            return np.full(self.n, addr >> 5, np.int64)
        return addr >> 5

    def _distinct(self, sec: np.ndarray, active, L: int) -> int:
        return int(self._per_request(sec, active, L).sum())

    def _per_request(self, sec: np.ndarray, active, L: int) -> np.ndarray:
        """Distinct sectors of each request of L lanes (inactive lanes touch none)."""
        if active is not ALL and active is not True:
            sec = np.where(active, sec, -1)
        T = self.T
        if T % L == 0:
            rows = sec.reshape(-1, L)
        elif T < L:                     # a block's lanes are one partial request
            rows = sec.reshape(-1, T)
        else:                           # requests never span blocks: pad each block to whole requests
            pad = np.full((self.nb, -(-T // L) * L), -1, np.int64)
            pad[:, :T] = sec.reshape(self.nb, T)
            rows = pad.reshape(-1, L)
        if rows.shape[1] == 1:
            return (rows[:, 0] >= 0).astype(np.int64)
        s = np.sort(rows, axis=1)
        new = (s[:, 1:] != s[:, :-1]) & (s[:, 1:] >= 0)
        return new.sum(axis=1) + (s[:, 0] >= 0)


COPY_RULES = ("lines", "max", "global")      # Machine.copy_rule
# The rules a held-out batch may be predicted by beside the emulator's own (bench.heldout draw --compare): the
# cp.async sector rules before the tenth batch, diverged groups joined at every BSYNC (before the twelfth), and
# BRA.U taken lane by lane (before the seventeenth), a branch's predicate operand ignored (before the eighth), and
# every spill slot forgotten at a local array's store (before the sixteenth: where it matters, that rule mostly
# cannot predict at all, which a draw --differ counts as a difference)
RULES = ("copy_rule=max", "copy_rule=global", "bsync_tokens=false", "unanimous_bra=false", "branch_operand=false",
         "spill_slots=false")


def _lanes_per_request(width: int) -> int:
    """Lanes served by one request of a global access of this many bytes a lane (128 bytes a request above 4)."""
    return WARP // max(1, width // 4) if width > 4 else WARP


def _no_value(m, ins, mask, g, wmask):
    """Instructions whose results the emulator does not compute (floating point): their outputs are Unknown."""
    for o in ins.ops[:1]:
        if o.kind == "reg" and not o.name.startswith(("P", "UP")):
            m.put(o.name, Unknown(f"the result of {ins.full} at /*{ins.pc:04x}*/ (floating point)"), wmask)
        elif o.kind == "reg":
            m.put(o.name, Unknown(f"the predicate {ins.full} at /*{ins.pc:04x}*/ computes from floating point"),
                  wmask)


def _nothing(m, ins, mask, g, wmask):
    return None


_NO_VALUE = {"FFMA", "FADD", "FMUL", "FMNMX", "FSEL", "FSETP", "MUFU", "F2F", "I2F", "F2I", "FRND", "FCHK",
             "HADD2", "HMUL2", "FSWZADD", "I2FP", "F2IP", "DADD", "DMUL", "DFMA", "FMUL2", "FADD2", "FFMA2"}
_STRICT = set(CLASSES) | {"VOTEU"}   # memory accesses (their addresses must be known) and votes (across lanes)
_HANDLERS: dict = {op: _no_value for op in _NO_VALUE}
_HANDLERS.update({op: _nothing for op in ("NOP", "BSYNC", "BREAK", "WARPSYNC", "BAR", "DEPBAR",
                                          "LDGDEPBAR", "YIELD", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "NANOSLEEP")})

from . import _ops  # noqa: E402  (registers the integer, predicate and memory handlers)
_ops.register(_HANDLERS)
_HANDLERS["BSSY"] = lambda m, ins, mask, g, w: m.bssy(ins.ops[0].name, mask)
