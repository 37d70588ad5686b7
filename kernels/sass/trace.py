"""The machine's tile trace: the emulated SASS of a drawable tile, every lane's accesses mapped back to the
tensor elements they touch, as the same Access records the TensorIR trace plays.

Global addresses fall in a kernel parameter's tensor. Shared, local and register accesses name the element
whose value they hold: a load tags its destination registers with the element it read (provenance), a store
carries the tag into shared or local memory, and an FFMA reads its two factors' tags from registers. Local
memory (spills, arrays indexed at run time) is a level of its own."""
from __future__ import annotations

import numpy as np

from ..records import Access, Trace
from .emulator import ALL, CLASSES, Machine
from .values import Lanes

NONE = -1                       # a value whose element is not known (an address, a partial sum)


class Tracer:
    def __init__(self, launch):
        self.params = [p for p in launch.params if p.tensor]
        self.prov: dict[str, np.ndarray] = {}       # register -> element code per lane
        self.mem = {"shared": {}, "local": {}}      # (level) -> {(lane or block, byte address): code}
        self.events: list[tuple] = []               # (pc, text, level, kind, lanes, codes)
        self.phase: np.ndarray | None = None

    # ------------------------------------------------------------ element codes
    def _codes(self, addr, lanes: np.ndarray, width: int) -> np.ndarray:
        """Element code (parameter index << 40 | flat index) of each active lane's each 4-byte word."""
        a = _lane_addrs(addr, lanes)
        out = np.full((len(lanes), max(1, width // 4)), NONE, np.int64)
        for j in range(out.shape[1]):
            w = a + 4 * j
            for i, p in enumerate(self.params):
                hit = (w >= p.base) & (w < p.base + p.nbytes)
                out[hit, j] = (i << 40) | ((w[hit] - p.base) // 4)
        return out

    def _regs(self, ins, width: int) -> list[str]:
        d = next((o for o in ins.ops if o.kind == "reg"), None)
        if d is None or d.name in ("RZ", "URZ"):
            return []
        return [f"R{int(d.name[1:]) + j}" for j in range(max(1, width // 4))]

    def _set(self, m: Machine, regs: list[str], lanes: np.ndarray, codes: np.ndarray) -> None:
        for j, r in enumerate(regs):
            cur = self.prov.setdefault(r, np.full(m.n, NONE, np.int64))
            cur[lanes] = codes[:, j]

    def _get(self, m: Machine, regs: list[str], lanes: np.ndarray) -> np.ndarray:
        out = np.full((len(lanes), len(regs)), NONE, np.int64)
        for j, r in enumerate(regs):
            if r in self.prov:
                out[:, j] = self.prov[r][lanes]
        return out

    def _space(self, m: Machine, level: str, addr, lanes: np.ndarray, width: int) -> np.ndarray:
        """Keys of a shared (per block) or local (per lane) access: one per 4-byte word."""
        a = _lane_addrs(addr, lanes)
        owner = m.block[lanes] if level == "shared" else lanes
        return np.stack([owner * (1 << 32) + a + 4 * j for j in range(max(1, width // 4))], axis=1)

    # ------------------------------------------------------------ hooks
    def memory(self, m, ins, level, kind, active, addr, width):
        lanes = _lanes(m, active)
        if not len(lanes):
            return
        if level == "global":
            codes = self._codes(addr, lanes, width)
            if kind == "read":
                self._set(m, self._regs(ins, width), lanes, codes)
        else:
            keys = self._space(m, level, addr, lanes, width)
            store = self.mem[level]
            if kind == "write":
                src = ins.ops[-1]
                regs = [] if src.name == "RZ" else [f"R{int(src.name[1:]) + j}" for j in range(keys.shape[1])]
                codes = self._get(m, regs, lanes) if regs else np.full(keys.shape, NONE, np.int64)
                store.update(zip(keys.ravel().tolist(), codes.ravel().tolist()))
            else:
                codes = np.vectorize(lambda k: store.get(k, NONE), otypes=[np.int64])(keys)
                self._set(m, self._regs(ins, width), lanes, codes)
        self.events.append((ins.pc, ins.text, level, kind, lanes, codes))

    def copy(self, m, ins, active, sh, gl, width):
        lanes = _lanes(m, active)
        if not len(lanes):
            return
        codes = self._codes(gl, lanes, width)
        keys = self._space(m, "shared", sh, lanes, width)
        self.mem["shared"].update(zip(keys.ravel().tolist(), codes.ravel().tolist()))
        self.events.append((ins.pc, ins.text, "global", "read", lanes, codes))
        self.events.append((ins.pc, ins.text, "shared", "write", lanes, codes))

    def after(self, m, ins, mask, g):
        if ins.opcode == "BAR":
            self.events.append((ins.pc, ins.text, "barrier", "barrier", _lanes(m, mask), None))
        elif ins.opcode == "FFMA":              # a multiply-add reads its two factors from registers
            lanes = _lanes(m, m._and(mask, g))
            if len(lanes):
                codes = self._get(m, [o.name for o in ins.ops[1:3] if o.kind == "reg"], lanes)
                self.events.append((ins.pc, ins.text, "register", "read", lanes, codes))
        self._clear_or_copy(m, ins, mask, g)

    def _clear_or_copy(self, m, ins, mask, g):
        d = ins.ops[0] if ins.ops else None
        src = ins.ops[-1].name if ins.full in ("MOV", "IMAD.MOV.U32") else None
        if d is None or d.kind != "reg" or ins.opcode in CLASSES or (d.name not in self.prov and src not in self.prov):
            return
        lanes = _lanes(m, m._and(mask, g))
        # a copy of a value keeps its element; anything else computed into the register is no element
        self._set(m, [d.name], lanes, self.prov[src][lanes][:, None] if src in self.prov
                  else np.full((len(lanes), 1), NONE, np.int64))


def _lanes(m: Machine, active) -> np.ndarray:
    if active is False:
        return np.zeros(0, np.int64)
    if active is ALL or active is True:
        return np.arange(m.n)
    return np.flatnonzero(active)


def _lane_addrs(addr, lanes: np.ndarray) -> np.ndarray:
    if isinstance(addr, tuple):                 # ("lazy", base, c)
        return addr[1][lanes].astype(np.int64) + addr[2]
    if isinstance(addr, (int, np.integer)):
        return np.full(len(lanes), int(addr), np.int64)
    if isinstance(addr, Lanes):
        return addr.mat()[lanes].astype(np.int64)
    return np.asarray(addr, np.int64)[lanes]


def machine_trace(op: str, shape: dict, knobs, limit: int = 200_000) -> Trace:
    """The SASS of `knobs` at a drawable-tile shape, emulated lane by lane, as Access records."""
    from .. import traffic
    from ..ops import OPS
    from ..knobs import knobs_text
    from . import compiled
    c = compiled(op, shape, knobs)
    recs: list[Access] = []
    shapes = traffic.tensor_shapes(op, shape)
    for ln in c.launches:
        t = Tracer(ln)
        m = Machine(c.kernels[ln.name], ln, 0, ln.blocks, t)
        m.run()
        names = [p.tensor for p in t.params]
        phase = np.zeros(ln.blocks, np.int64)
        for pc, text, level, kind, lanes, codes in t.events:
            blocks, threads = m.block[lanes], m.tid[lanes]
            if level == "barrier":
                for b in np.unique(blocks):
                    recs.append(Access(len(recs), int(phase[b]), int(b), -1, "", (), "shared", "barrier",
                                       f"/*{pc:04x}*/ {text}"))
                    phase[b] += 1
                continue
            for i in range(len(lanes)):
                for code in codes[i]:
                    if code == NONE:
                        continue
                    tensor = names[code >> 40]
                    idx = tuple(int(x) for x in np.unravel_index(code & ((1 << 40) - 1), shapes[tensor]))
                    recs.append(Access(len(recs), int(phase[blocks[i]]), int(blocks[i]), int(threads[i]), tensor,
                                       idx, level, kind, f"/*{pc:04x}*/ {text}"))
                    if len(recs) > limit:
                        raise ValueError(f"the machine trace passed {limit} accesses; draw a smaller tile")
    return Trace(op=op, shape=dict(shape), target="cuda", knobs=knobs_text(knobs), records=tuple(recs),
                 blocks=max(ln.blocks for ln in c.launches), threads=max(ln.threads for ln in c.launches),
                 tensors=shapes, inputs=OPS[op].inputs, output=OPS[op].output)
