"""nvdisasm's listing -> kernels of instructions with parsed operands (plain frozen records, no semantics)."""
from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.?[A-Za-z_][\w.]*):$")
_KERNEL = re.compile(r"^\s*\.section\s+\.text\.([A-Za-z_]\w*),")
_GUARD = re.compile(r"^@(!?)(U?P[T0-6])\s+")
_REG = re.compile(r"^(-|~|!)?(\|)?(U?R(?:Z|\d+)|U?P(?:T|\d)|SRZ|PR)(?:\.(64|reuse|H0|H1|B\d|U32|X\d))*\|?$")
_NOTE = re.compile(r"\s*\(\*.*?\*\)")     # nvdisasm's notes, e.g. (*"SpillRefill"*)
_MEM = re.compile(r"^(?:desc\[(UR\d+)\])?\[(.*)\]$")


@dataclass(frozen=True)
class Op:
    """One operand. kind: reg (R/UR/P/UP, with neg/inv/not flags), imm (an integer or float bit pattern),
    cbank (c[bank][offset], offset maybe plus a register), mem (base register(s) + offset), sreg, label, other."""
    kind: str
    name: str = ""              # register name (R5, URZ, P0, PT ...), special register, label, barrier
    value: int = 0              # immediate, or constant-bank / memory offset
    neg: bool = False           # -R: two's complement
    inv: bool = False           # ~R: bitwise not
    not_: bool = False          # !P
    wide: bool = False          # R.64: a register pair
    regs: tuple[str, ...] = ()  # registers added into a memory or constant-bank address
    text: str = ""


@dataclass(frozen=True)
class Instr:
    pc: int
    guard: str                  # "" (always), "P0", "UP1" ...
    guard_not: bool
    opcode: str                 # LDG, IADD3, ...
    mods: tuple[str, ...]       # ("E", "128", "CONSTANT") ...
    ops: tuple[Op, ...]
    text: str
    note: str = ""              # nvdisasm's note, e.g. SpillRefill on a spill or its reload

    @property
    def full(self) -> str:
        return ".".join((self.opcode,) + self.mods)


@dataclass(frozen=True)
class Kernel:
    name: str
    instrs: tuple[Instr, ...]
    labels: dict                # label -> index into instrs

    def index_of_pc(self) -> dict[int, int]:
        return {ins.pc: i for i, ins in enumerate(self.instrs)}


class ParseError(ValueError):
    pass


def _split_ops(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _int(s: str) -> int:
    return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s)


def _addr(inner: str) -> tuple[tuple[str, ...], int, bool]:
    """'R8.64+-0x150' -> (("R8",), -0x150, wide)."""
    regs, off, wide = [], 0, False
    for term in inner.replace("+-", "+~").split("+"):
        term = term.strip()
        neg = term.startswith("~")
        term = term.lstrip("~")
        if re.match(r"^-?0x[0-9a-f]+$|^-?\d+$", term):
            off += -_int(term) if neg else _int(term)
        else:
            m = re.match(r"^(U?R(?:Z|\d+))((?:\.\w+)*)$", term)
            if not m:
                raise ParseError(f"address term '{term}'")
            regs.append(m.group(1))
            wide = wide or ".64" in m.group(2)
    return tuple(regs), off, wide


def operand(s: str) -> Op:
    s = s.strip()
    if s.startswith("`("):
        return Op("label", name=s[2:].rstrip(")"), text=s)
    m = _MEM.match(s)
    if m:
        regs, off, wide = _addr(m.group(2))
        return Op("mem", name=m.group(1) or "", value=off, wide=wide, regs=regs, text=s)
    m = re.match(r"^c\[(0x[0-9a-f]+)\]\[(.*)\]$", s)
    if m:
        regs, off, _ = _addr(m.group(2))
        return Op("cbank", value=off, regs=regs, name=m.group(1), text=s)
    if s.startswith("SR_"):
        return Op("sreg", name=s, text=s)
    m = _REG.match(s)
    if m:
        sign, name, suffix = m.group(1), m.group(3), m.group(4)
        return Op("reg", name=name, neg=sign == "-", inv=sign == "~", not_=sign == "!", wide=suffix == "64",
                  text=s)
    if re.match(r"^-?0x[0-9a-f]+$|^-?\d+$", s):
        return Op("imm", value=_int(s), text=s)
    if re.match(r"^[-+]?(\d+\.?\d*(e[-+]?\d+)?|INF|QNAN|NAN)$", s, re.I):
        return Op("fimm", text=s)
    if re.match(r"^S?B\d+$", s):
        return Op("barrier", name=s, text=s)
    return Op("other", name=s, text=s)


def parse(listing: str) -> dict[str, Kernel]:
    """Every kernel of an nvdisasm -c listing, by name, in the order of the listing."""
    kernels: dict[str, Kernel] = {}
    name, instrs, labels = None, [], {}

    def close():
        if name is not None:
            kernels[name] = Kernel(name, tuple(instrs), dict(labels))
    for line in listing.splitlines():
        m = _KERNEL.match(line)
        if m:
            close()
            name, instrs, labels = m.group(1), [], {}
            continue
        m = _LABEL.match(line.strip())
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        m = _LINE.match(line)
        if not m or name is None:
            continue
        pc, raw = int(m.group(1), 16), m.group(2)
        note = _NOTE.search(raw)
        body = _NOTE.sub("", raw)
        g = _GUARD.match(body)
        guard, gnot = (g.group(2), g.group(1) == "!") if g else ("", False)
        body = body[g.end():] if g else body
        head, _, rest = body.partition(" ")
        parts = head.split(".")
        try:
            ops = tuple(operand(o) for o in _split_ops(rest)) if rest.strip() else ()
        except ParseError as e:
            raise ParseError(f"cannot read the operand {e} of '{body}' at /*{pc:04x}*/") from None
        instrs.append(Instr(pc, guard, gnot, parts[0], tuple(parts[1:]), ops, body,
                            note.group(0).strip(' (*")') if note else ""))
    close()
    return kernels
