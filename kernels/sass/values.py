"""What a register holds in the emulator: a value every lane shares (a Python int), a known value per lane
(Lanes: a numpy base plus a shared offset, so adding a constant to a pointer in a loop costs nothing), or
Unknown: data the emulator does not compute (floating point, values loaded from memory).

All lanes of the launched grid (or of a chunk of its blocks) sit in one flat array, block after block."""
from __future__ import annotations

import numpy as np

M32 = 0xFFFFFFFF
B32 = 1 << 32


class Unknown:
    """A value the emulator does not compute; `why` says where it came from (for the failure sentence)."""
    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why

    def __repr__(self):
        return f"Unknown({self.why})"


class Uninit(Unknown):
    """A register never written: any value may stand in for it where no lane reads it."""
    __slots__ = ()


class Bits(Unknown):
    """A register of which only some bits are known (nvcc packs predicates into single bits of a register it
    never initialised, or a 16-bit counter into half of one that holds a float). Bitwise logic, byte
    permutes and the low bits of sums and products use the known bits; `known` is a mask, an int or one per
    lane; where it is whole for every lane an instruction reads, the value is simply known."""
    __slots__ = ("value", "known")

    def __init__(self, value, known: int, why: str):
        super().__init__(why)
        self.value, self.known = value, known


def bits_of(v):
    """(value, known-bits mask) of a register value for bitwise logic (an Unknown knows none of its bits)."""
    if isinstance(v, Bits):
        return v.value, v.known
    if isinstance(v, Mixed):                    # known in some lanes: every bit of those, none of the others
        x, k = bits_of(v.known)
        return x, np.where(v.unk, 0, k)
    if isinstance(v, Unknown):
        return 0, 0
    return (v.mat().astype(np.int64) if isinstance(v, Lanes) else v), M32


class Mixed:
    """A register that is known in some lanes and Unknown in others (written under a divergent branch or a
    guard): a guard, branch or address may use it only where none of its active lanes holds the Unknown part;
    a lane-wise integer or predicate instruction uses the known part and writes Unknown in the lanes that
    hold the other (Machine.lenient, Machine.taint). `known` holds any value in the `unk` lanes."""
    __slots__ = ("known", "unk", "why")

    def __init__(self, known, unk: np.ndarray, why: str):
        self.known, self.unk, self.why = known, unk, why


def merge(w, new, old):
    """Lane-wise w ? new : old for register values that may be Unknown in some lanes."""
    if isinstance(old, Uninit) or old is None:
        return new
    if isinstance(new, Bits) or isinstance(old, Bits):
        a, b = bits_of(new), bits_of(old)
        return Bits(np.where(w, a[0], b[0]), np.where(w, a[1], b[1]), (new if isinstance(new, Bits) else old).why)
    if isinstance(new, Unknown) and isinstance(old, Unknown):
        return new
    nk, nu = _parts(new, w)
    ok, ou = _parts(old, w)
    unk = np.where(w, nu, ou)
    if nk is None:
        known = ok
    elif ok is None:
        known = nk
    else:
        known = select(w, nk, ok) if not isinstance(nk, (bool, np.bool_)) and not (
            isinstance(nk, np.ndarray) and nk.dtype == bool) else np.where(w, nk, ok)
    if not unk.any():
        return known
    why = (new if isinstance(new, (Unknown, Mixed)) else old).why
    if known is None or unk.all():
        return Unknown(why)
    return Mixed(known, unk, why)


def _parts(v, w):
    """(known value or None, unknown-lanes mask) of a register value."""
    if isinstance(v, Mixed):
        return v.known, v.unk
    if isinstance(v, Unknown):
        return None, np.ones(np.shape(w), bool)
    return v, np.zeros(np.shape(w), bool)


class Lanes:
    """Per-lane 32-bit values: (base + off) mod 2**32, base a uint32 array that is never written."""
    __slots__ = ("base", "off", "_mat", "_lo", "_hi", "__weakref__")

    def __init__(self, base: np.ndarray, off: int = 0):
        self.base = base
        self.off = off & M32
        self._mat = None if self.off else base
        self._lo = self._hi = None

    def mat(self) -> np.ndarray:
        if self._mat is None:
            self._mat = (self.base + np.uint32(self.off)).astype(np.uint32, copy=False)
        return self._mat

    def bounds(self) -> tuple[int, int]:
        if self._lo is None:
            self._lo, self._hi = int(self.base.min()), int(self.base.max())
        return self._lo, self._hi

    def plus(self, c: int) -> "Lanes":
        return Lanes(self.base, self.off + c)

    def wrap(self) -> int | None:
        """0 or 1 if every lane's base + off wraps the same way past 2**32 (None if lanes differ)."""
        lo, hi = self.bounds()
        w = (lo + self.off) >> 32
        return w if (hi + self.off) >> 32 == w else None


def is_known(v) -> bool:
    return not isinstance(v, Unknown)


def u32(v):
    """The value as uint32: an int, or a materialized uint32 array."""
    return v.mat() if isinstance(v, Lanes) else v


def s32(v):
    """The value as signed int64 (sign-extended from 32 bits)."""
    if isinstance(v, Lanes):
        return v.mat().view(np.int32).astype(np.int64)
    return v - B32 if v & 0x80000000 else v


def z64(v):
    """The value zero-extended, as int64."""
    return v.mat().astype(np.int64) if isinstance(v, Lanes) else v


def make(x) -> int | Lanes:
    """A computed result (int or integer ndarray, any width) as a 32-bit register value."""
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return int(x) & M32
        return Lanes((x & M32).astype(np.uint32))
    return int(x) & M32


def pred_not(a):
    return (not a) if isinstance(a, bool) else ~a


def select(p, a, b):
    """Lane-wise p ? a : b of two register values (either may be Unknown where p never picks it)."""
    if p is True:
        return a
    if p is False:
        return b
    if not p.any():
        return b
    if p.all():
        return a
    if isinstance(a, (Unknown, Mixed)) or isinstance(b, (Unknown, Mixed)):
        return merge(p, a, b)
    return make(np.where(p, u32(a), u32(b)))
