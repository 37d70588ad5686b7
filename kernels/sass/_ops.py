"""The emulator's instruction semantics: integer, predicate, uniform-datapath and memory instructions.

Each handler takes (machine, instruction, active mask, guard, write mask) and writes its results with
machine.put; an input the emulator does not compute makes the result Unknown (only in the lanes where it is
Unknown, for a register known in some lanes: the machine reads its known part and put marks the rest)."""
from __future__ import annotations

import numpy as np

from .values import B32, M32, Bits, Lanes, Mixed, Unknown, bits_of, make, merge, pred_not, s32, select, z64

_CMP = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "EQ": np.equal,
        "NE": np.not_equal}


def _unknown(*vs):
    return next((v for v in vs if isinstance(v, Unknown)), None)


def _is_pred(o) -> bool:
    return o.kind == "reg" and o.name.startswith(("P", "UP")) and o.name != "PR"


def _collapse(p):
    """A predicate array that is the same for every lane, as a bool."""
    if isinstance(p, np.ndarray):
        if p.all():
            return True
        if not p.any():
            return False
    return p


def _bool_op(name: str, a, b):
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    if isinstance(a, bool) and isinstance(b, bool):
        return {"AND": a and b, "OR": a or b, "XOR": a != b}[name]
    return _collapse({"AND": np.logical_and, "OR": np.logical_or, "XOR": np.logical_xor}[name](a, b))


def _lut(lut: int, a, b, c, width_mask):
    """Bitwise three-input function given by its truth table (a = 0xF0, b = 0xCC, c = 0xAA)."""
    out = 0
    for i in range(8):
        if lut >> i & 1:
            t = (a if i & 4 else ~a & width_mask) & (b if i & 2 else ~b & width_mask) & \
                (c if i & 1 else ~c & width_mask)
            out = out | t
    return out


def _contrib(m, ins, o):
    """An addend of IADD3: int or int64 array in [0, 2**32] (two's complement of a negated register as the
    hardware adds it, so carries come out right), or Lanes for a plain register."""
    if o.kind == "reg" and (o.neg or o.inv):
        v = m.reg(o.name)
        if isinstance(v, Unknown):
            return v
        x = z64(v)
        return (B32 - x) if o.neg else (~x & M32)
    return m.val(ins, o)


def _sum(parts, carry_in=0):
    """(value, carry) of a sum of addends; Lanes stay lazy when only one of them varies by lane."""
    bad = _unknown(*parts, carry_in)
    if bad is not None:
        return bad, bad
    ints = sum(p for p in parts if isinstance(p, int))
    lanes = [p for p in parts if isinstance(p, Lanes)]
    arrays = [p for p in parts if isinstance(p, np.ndarray)]
    if isinstance(carry_in, np.ndarray):
        arrays.append(carry_in.astype(np.int64))
    else:
        ints += int(carry_in)
    if len(lanes) == 1 and not arrays:
        ln = lanes[0]
        w = ln.wrap()
        if w is not None:
            t = ln.off - w * B32 + ints
            lo, hi = ln.bounds()
            c0, c1 = (lo + t) >> 32, (hi + t) >> 32
            carry = c0 if c0 == c1 else ((ln.base.astype(np.int64) + t) >> 32)
            return Lanes(ln.base, t), carry
    if not lanes and not arrays:
        return ints & M32, ints >> 32
    total = ints
    for p in lanes:
        total = total + z64(p)
    for p in arrays:
        total = total + p
    return make(total), _collapse_int(total >> 32)


def _collapse_int(c):
    if isinstance(c, np.ndarray):
        lo, hi = int(c.min()), int(c.max())
        if lo == hi:
            return lo
    return c


def _carry_pred(c):
    if isinstance(c, Unknown):
        return c
    if isinstance(c, int):
        return c != 0
    return _collapse(c != 0)


def _low_known(vals) -> tuple[object, list] | None:
    """For arithmetic whose low result bits depend only on the operands' low bits (add, multiply): the mask of
    the low bits every operand has known (per lane where it differs), and the operands with unknown bits
    zeroed. None when no low bit is known."""
    keep, out = M32, []
    for v in vals:
        x, k = bits_of(v)
        keep = keep & (((k + 1) & ~k) - 1)     # the run of known bits from bit 0
        out.append(x)
    return None if not np.any(keep) else (keep, out)


def _partial(m, ins, dst, vals, f, w, bad) -> None:
    """Write f(vals) where only low bits are known (see _low_known), or `bad` where none are."""
    lk = _low_known(vals)
    if lk is None:
        m.put(dst, bad, w)
        return
    keep, xs = lk
    r = f(*xs) & keep
    whole = bool(np.all(keep == M32))
    m.put(dst, (make(r) if isinstance(r, np.ndarray) else r) if whole else Bits(r, keep, bad.why), w)


def _pin(m, o):
    p = m.pred(o)
    if isinstance(p, Unknown):
        return p
    return int(p) if isinstance(p, bool) else p.astype(np.int64)


def iadd3(m, ins, mask, g, w):
    ops = ins.ops
    dst = ops[0]
    k = 1
    pouts = []
    while _is_pred(ops[k]):
        pouts.append(ops[k])
        k += 1
    srcs = ops[k:k + 3]
    cin = 0
    if "X" in ins.mods:
        for o in ops[k + 3:]:
            p = _pin(m, o)
            cin = p if isinstance(p, Unknown) else cin + p
    v, carry = _sum([_contrib(m, ins, o) for o in srcs], cin)
    if isinstance(v, Unknown) and not pouts and cin == 0 and not any(o.neg or o.inv for o in srcs):
        _partial(m, ins, dst.name, [m.val(ins, o) for o in srcs], lambda *x: sum(x), w, v)
        return
    m.put(dst.name, v, w)
    for j, o in enumerate(pouts):
        if isinstance(carry, Unknown):
            m.put(o.name, carry, w)
        else:
            m.put(o.name, _carry_pred((carry >> j) & 1 if j else carry), w)


def viadd(m, ins, mask, g, w):
    vals = [m.val(ins, o) for o in ins.ops[1:3]]
    v, _ = _sum(vals)
    if isinstance(v, Unknown):
        _partial(m, ins, ins.ops[0].name, vals, lambda a, b: a + b, w, v)
        return
    m.put(ins.ops[0].name, v, w)


def imad(m, ins, mask, g, w):
    ops = ins.ops
    dst = ops[0]
    a, b, c = (m.val(ins, o) for o in ops[1:4])
    bad = _unknown(a, b, c)
    mods = ins.mods
    unsigned = "U32" in mods
    if "WIDE" in mods:
        cl, ch = m.pair(ops[3].name) if ops[3].kind == "reg" else (c, 0 if c < 0x80000000 or unsigned else M32)
        bad = bad or _unknown(cl, ch)
        if bad is not None:
            m.put_pair(dst.name, bad, bad, w)
            return
        if isinstance(a, int) and isinstance(b, int):
            prod = (a * b) if unsigned else (s32(a) * s32(b))
            lo, carry = _sum([cl, prod & M32])
            hi, _ = _sum([ch, (prod >> 32) & M32], carry)
            m.put_pair(dst.name, lo, hi, w)
            return
        lo_p, hi_p = _wide_product(m, a, b, unsigned)
        lo, carry = _sum([cl, lo_p])
        hi, _ = _sum([ch, hi_p], carry)
        m.put_pair(dst.name, lo, hi, w)
        return
    if bad is not None:
        if "X" in mods or "HI" in mods:
            m.put(dst.name, bad, w)
        else:                           # the low bits of a*b + c need only the low bits of a, b and c
            _partial(m, ins, dst.name, [a, b, c], lambda x, y, z: x * y + z, w, bad)
        return
    cin = 0
    if "X" in mods:
        cin = _pin(m, ops[4])
        if isinstance(cin, Unknown):
            m.put(dst.name, cin, w)
            return
    if "HI" in mods:                # the addend is the register pair c+1:c, added to the 64-bit product
        cl, ch = m.pair(ops[3].name) if ops[3].kind == "reg" else (c, 0)
        bad = _unknown(cl, ch)
        if bad is not None:
            m.put(dst.name, bad, w)
            return
        u64 = np.uint64
        if unsigned:
            prod = np.asarray(z64(a)).astype(u64) * np.asarray(z64(b)).astype(u64)
        else:
            prod = np.asarray(s32(a) * s32(b), dtype=np.int64).astype(u64)
        total = prod + ((np.asarray(z64(ch)).astype(u64) << u64(32)) | np.asarray(z64(cl)).astype(u64))
        hi = ((total >> u64(32)) & u64(M32)).astype(np.int64)
        m.put(dst.name, make(hi) if hi.ndim else int(hi), w)
        return
    if isinstance(a, int) and isinstance(b, int):
        v, _ = _sum([(a * b) & M32, c], cin)
    elif isinstance(b, int) and b == 1:
        v, _ = _sum([a, c], cin)
    elif isinstance(a, int) and a == 1:
        v, _ = _sum([b, c], cin)
    else:
        v, _ = _sum([make(z64(a) * z64(b)), c], cin)
    m.put(dst.name, v, w)


def _wide_product(m, a, b, unsigned: bool):
    """The 64-bit product of two register values as (low, high) register values; remembered per operand pair,
    since a loop recomputes the same lane offsets against a moving uniform base every iteration."""
    key = ("wide", unsigned, id(a.base) if isinstance(a, Lanes) else a, a.off if isinstance(a, Lanes) else 0,
           id(b.base) if isinstance(b, Lanes) else b, b.off if isinstance(b, Lanes) else 0)
    hit = m._memo.get(key)
    if hit is not None and all(h is x for h, x in zip(hit[0], (a, b))):
        return hit[1]
    if unsigned:
        prod = np.asarray(z64(a)).astype(np.uint64) * np.asarray(z64(b)).astype(np.uint64)
        lo_p = (prod & np.uint64(M32)).astype(np.int64)
        hi_p = (prod >> np.uint64(32)).astype(np.int64)
    else:
        prod = s32(a) * s32(b)
        lo_p, hi_p = prod & M32, (prod >> 32) & M32
    out = (make(lo_p), _uniform(make(hi_p)))
    m._memo[key] = ((a, b), out)
    return out


def _uniform(v):
    """A Lanes value that is the same in every lane, as an int."""
    if isinstance(v, Lanes):
        lo, hi = v.bounds()
        if lo == hi:
            return (lo + v.off) & M32
    return v


def _known3(m, ins, w):
    """(destination, its three source values), or None after writing Unknown where one of them is unknown."""
    vals = [m.val(ins, o) for o in ins.ops[1:4]]
    bad = _unknown(*vals)
    if bad is not None:
        m.put(ins.ops[0].name, bad, w)
        return None
    return ins.ops[0], vals


def idp(m, ins, mask, g, w):
    """Integer dot products: IDP.4A (four bytes of a times four bytes of b) and IDP.2A (two 16-bit halves of
    a times two bytes of b, the low or high pair), plus c; .S/.U on each operand's parts. IDP.2A reads only
    two of b's bytes: nvcc packs the other two from a register it never wrote (held-out dwsep_conv2d-2, batch
    3765975936), so only the bits it reads need be known (Bits), in each lane that computes it."""
    kinds = [x for x in ins.mods if x[0] in "SU" and x[1:].isdigit()]
    if len(kinds) != 2:
        m.fail(ins, f"the dot product {ins.full} is not emulated")
    (sa, wa), (sb, wb) = ((k[0] == "S", int(k[1:])) for k in kinds)
    dst = ins.ops[0]
    vals = [m.val(ins, o) for o in ins.ops[1:4]]
    bad = _unknown(*vals)
    if bad is not None:
        from .emulator import ALL
        b_need = M32 if wa == 8 else (0xFFFF0000 if "HI" in ins.mods else 0x0000FFFF)
        ok = True
        for (x, k), need in zip((bits_of(v) for v in vals), (M32, b_need, M32)):
            ok = ok & ((k & need) == need)
        act = ok if m.mask is ALL or not isinstance(ok, np.ndarray) else ok[m.mask]
        if not np.any(act):
            m.put(dst.name, bad, w)
            return
        xs = [bits_of(v)[0] for v in vals]
        a, b, c = (make(x) if isinstance(x, np.ndarray) else x for x in xs)
    else:
        a, b, c = vals

    def part(x, i, width, signed):
        p = (z64(x) >> (i * width)) & ((1 << width) - 1)
        return p - ((p >> (width - 1)) << width) if signed else p
    n = 32 // wa
    off = 2 if "HI" in ins.mods else 0
    total = sum(part(a, i, wa, sa) * part(b, i + (off if n == 2 else 0), wb, sb) for i in range(n))
    v, _ = _sum([make(total) if isinstance(total, np.ndarray) else total & M32, c])
    if bad is not None and not np.all(ok):     # lanes whose operands' read bits are not all known
        v = merge(np.broadcast_to(ok, (m.n,)), v, Unknown(bad.why))
    m.put(dst.name, v, w)


def _hi_of(a, c, sh: int, sx: bool):
    """((c:a) << sh) >> 32, or with sx: (sign-extended a << sh) >> 32."""
    if sx:
        return make(s32(a) << sh >> 32) if isinstance(a, Lanes) else (s32(a) << sh >> 32) & M32
    if sh == 0:
        return c
    x = (z64(a) >> (32 - sh)) | (z64(c) << sh)
    return make(x) if isinstance(x, np.ndarray) else x & M32


def lea(m, ins, mask, g, w):
    ops = ins.ops
    dst = ops[0]
    k = 1
    pout = None
    if _is_pred(ops[1]):
        pout, k = ops[1], 2
    mods = ins.mods
    if "HI" in mods:
        sx = "SX32" in mods
        a, b = m.val(ins, ops[k]), m.val(ins, ops[k + 1])
        if sx:
            c, sh = 0, ops[k + 2].value
            rest = ops[k + 3:]
        else:
            c, sh = m.val(ins, ops[k + 2]), ops[k + 3].value
            rest = ops[k + 4:]
        bad = _unknown(a, b, c)
        if bad is not None:
            m.put(dst.name, bad, w)
            return
        cin = _pin(m, rest[0]) if "X" in mods and rest else 0
        v, carry = _sum([_hi_of(a, c, sh, sx), b], cin)
    else:
        a, b, sh = m.val(ins, ops[k]), m.val(ins, ops[k + 1]), ops[k + 2].value
        bad = _unknown(a, b)
        if bad is not None:
            m.put(dst.name, bad, w)
            if pout is not None:
                m.put(pout.name, bad, w)
            return
        sa = make(z64(a) << sh) if isinstance(a, Lanes) else (a << sh) & M32
        cin = _pin(m, ops[k + 3]) if "X" in mods and len(ops) > k + 3 else 0
        v, carry = _sum([sa, b], cin)
    m.put(dst.name, v, w)
    if pout is not None:
        m.put(pout.name, _carry_pred(carry), w)


def shf(m, ins, mask, g, w):
    got = _known3(m, ins, w)
    if got is None:
        return
    dst, (a, sh, c) = got
    mods = ins.mods
    limit = 32 if ("U32" in mods or "S32" in mods) else 63
    sh = np.minimum(z64(sh), limit).astype(np.uint64) if isinstance(sh, Lanes) else np.uint64(min(sh, limit))
    lo = np.asarray(z64(a), dtype=np.int64)
    if "L" in mods or not ("S32" in mods or "S64" in mods):
        v = (np.asarray(z64(c), dtype=np.int64).astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
        r = (v << sh) if "L" in mods else (v >> sh)
    else:
        v = (np.asarray(s32(c), dtype=np.int64) << 32) | lo
        r = (v >> sh.astype(np.int64)).astype(np.uint64)
    out = ((r >> np.uint64(32)) if "HI" in mods else r) & np.uint64(M32)
    m.put(dst.name, make(out.astype(np.int64)) if out.ndim else int(out), w)


def lop3(m, ins, mask, g, w):
    ops = ins.ops
    pout = None
    if _is_pred(ops[0]):
        pout, ops = ops[0], ops[1:]
    dst = ops[0]
    a, b, c = (m.val(ins, o) for o in ops[1:4])
    if m.taint is not None:     # a Mixed operand: bit by bit, its unknown lanes know none of their bits
        a, b, c = (_bitwise(m, ins, o) for o in ops[1:4])
        m.taint = None
    lut = ops[4].value
    bad = _unknown(a, b, c)
    known = M32
    if bad is None:
        r = _lut(lut, z64(a), z64(b), z64(c), M32)
    else:
        parts = [bits_of(x) for x in (a, b, c)]
        # bit by bit: a result bit is known where every setting of the inputs' unknown bits gives the same
        outs = [_lut(lut, *(v | (~k & M32 if j >> i & 1 else 0) for i, (v, k) in enumerate(parts)), M32)
                for j in range(8)]
        for o in outs[1:]:
            known = known & ~(o ^ outs[0]) & M32
        r = outs[0] & known
    if np.all(known == M32):
        m.put(dst.name, make(r) if isinstance(r, np.ndarray) else r & M32, w)
    else:
        m.put(dst.name, Bits(r, known, bad.why), w)
    if pout is not None:
        p = r != 0
        pin = m.pred(ops[5]) if len(ops) > 5 else False
        if isinstance(pin, Unknown):
            m.put(pout.name, pin, w)
            return
        v = _collapse(p | pin) if isinstance(p, np.ndarray) or isinstance(pin, np.ndarray) else bool(p or pin)
        if not np.all(known == M32):    # a set known bit decides; known bits all clear do not
            decided = (known == M32) | p | pin     # lane by lane: only the lanes that read it need be decided
            if not np.any(decided):
                m.put(pout.name, bad, w)
                return
            if not np.all(decided):
                v = merge(np.broadcast_to(decided, (m.n,)), v, Unknown(bad.why))
        m.put(pout.name, v, w)


def _bitwise(m, ins, o):
    """An operand of bitwise logic, a Mixed register as Bits (every bit known in its known lanes, none in the
    others), so that bits set or cleared by a mask become known in every lane: nvcc packs predicates into bits
    of a register that holds a float in some lanes (held-out gemm-24, batch 3706999825: R25 written by FFMA
    under a guard, then cleared and set bit by bit and read back with LOP3; as a Mixed operand its unknown
    lanes made the whole result unknown there)."""
    if o.kind == "reg" and not (o.inv or o.neg):
        v = m.regs.get(o.name)
        if isinstance(v, Mixed):
            return Bits(*bits_of(v), v.why)
    return m.val(ins, o)


def plop3(m, ins, mask, g, w):
    d1, d2, pa, pb, pc, lut, lut2 = ins.ops[:7]
    a, b, c = m.pred(pa), m.pred(pb), m.pred(pc)
    bad = _unknown(a, b, c)
    for dst, table in ((d1, lut.value), (d2, lut2.value)):
        if bad is not None:
            m.put(dst.name, bad, w)
            continue
        r = _lut(table, *(np.asarray(x, dtype=np.int64) for x in (a, b, c)), 1)
        r = np.asarray(r) != 0
        m.put(dst.name, bool(r) if r.ndim == 0 else _collapse(r), w)


def isetp(m, ins, mask, g, w):
    d1, d2, a_o, b_o = ins.ops[:4]
    if "EX" in ins.mods:
        m.fail(ins, "64-bit comparisons (ISETP.EX) are not emulated")
    a, b = m.val(ins, a_o), m.val(ins, b_o)
    compared = m.taint                  # lanes whose comparison read an unknown part (lenient)
    pin = m.pred(ins.ops[4]) if len(ins.ops) > 4 else True
    bad = _unknown(a, b, pin)
    if bad is not None:
        m.put(d1.name, bad, w)
        m.put(d2.name, bad, w)
        return
    cmp = next(x for x in ins.mods if x in _CMP)
    unsigned = "U32" in ins.mods
    key = ("cmp", ins.full, id(a.base) if isinstance(a, Lanes) else a, a.off if isinstance(a, Lanes) else 0,
           id(b.base) if isinstance(b, Lanes) else b, b.off if isinstance(b, Lanes) else 0)
    hit = m._memo.get(key)
    if hit is not None and all(h is x for h, x in zip(hit[0], (a, b))):
        r = hit[1]
    else:
        conv = z64 if unsigned else s32
        r = _CMP[cmp](conv(a), conv(b))
        r = bool(r) if np.ndim(r) == 0 else _collapse(r)
        m._memo[key] = ((a, b), r)
    boolop = next(x for x in ins.mods if x in ("AND", "OR", "XOR"))
    read = m.taint
    for dst, x in ((d1, r), (d2, pred_not(r))):
        if read is not compared and boolop != "XOR":
            m.taint = _decided(read, compared, x if boolop == "OR" else pred_not(x))
        m.put(dst.name, _bool_op(boolop, x, pin), w)


def _decided(read, compared, decides):
    """The lanes whose result is Unknown when the input predicate is unknown in `read` lanes but the comparison
    alone `decides` the result in some of them (x OR p where x is true, x AND p where x is false): those lanes
    are known. nvcc packs bounds predicates into bits of a register that holds a float in lanes where the
    comparison already decides (held-out gemm-24, batch 3706999825: ISETP.GT.U32.OR P0, PT, R4, 0x38, !P0)."""
    rest = read & ~np.asarray(decides, dtype=bool)
    if compared is not None:
        rest = rest | compared
    return rest if rest.any() else None


def sel(m, ins, mask, g, w):
    dst, a_o, b_o, p_o = ins.ops[:4]
    a, b, p = m.val(ins, a_o), m.val(ins, b_o), m.pred(p_o)
    if isinstance(p, Unknown):
        m.put(dst.name, p, w)
        return
    m.put(dst.name, select(p, a, b), w)


def minmax(m, ins, mask, g, w):
    ops = ins.ops
    dst = ops[0]
    if ins.opcode == "VIADDMNMX":
        s, _ = _sum([m.val(ins, ops[1]), m.val(ins, ops[2])])
        a, b, p = s, m.val(ins, ops[3]), m.pred(ops[4])
    else:
        a, b, p = m.val(ins, ops[1]), m.val(ins, ops[2]), m.pred(ops[3])
    bad = _unknown(a, b, p)
    if bad is not None:
        m.put(dst.name, bad, w)
        return
    conv = z64 if "U32" in ins.mods else s32
    x, y = conv(a), conv(b)
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    r = np.where(p, lo, hi) if isinstance(p, np.ndarray) else (lo if p else hi)
    m.put(dst.name, make(r) if np.ndim(r) else int(r) & M32, w)


def prmt(m, ins, mask, g, w):
    dst, a_o, s_o, b_o = ins.ops[:4]
    # bytes taken from a register known only in some lanes are known in those (held-out gemm-32, batch
    # 3706999825: a 16-bit counter PRMTed into the low half of a register that holds a float in some lanes)
    a, sel_, b = _bitwise(m, ins, a_o), m.val(ins, s_o), _bitwise(m, ins, b_o)
    pa, pb = bits_of(a), bits_of(b)
    if isinstance(sel_, Unknown):
        m.put(dst.name, sel_, w)
        return
    if not isinstance(sel_, int):
        m.fail(ins, "a per-lane byte selector is not emulated")
    u64 = np.uint64
    x = (np.asarray(pb[0]).astype(u64) << u64(32)) | np.asarray(pa[0]).astype(u64)
    kx = (np.asarray(pb[1]).astype(u64) << u64(32)) | np.asarray(pa[1]).astype(u64)   # the known bits
    out, known = 0, 0
    for i in range(4):
        s = (sel_ >> (4 * i)) & 0xF
        byte = ((x >> u64(8 * (s & 7))) & u64(0xFF)).astype(np.int64)
        kb = ((kx >> u64(8 * (s & 7))) & u64(0xFF)).astype(np.int64)
        if s & 8:                       # replicate the byte's sign bit
            byte = np.where(byte & 0x80, 0xFF, 0) if isinstance(byte, np.ndarray) else (0xFF if byte & 0x80 else 0)
            kb = np.where(kb & 0x80, 0xFF, 0) if isinstance(kb, np.ndarray) else (0xFF if kb & 0x80 else 0)
        out = out | (byte << (8 * i))
        known = known | (kb << (8 * i))
    out, known = (int(v) if np.ndim(v) == 0 else v for v in (out, known))
    if not np.all(known == M32):
        m.put(dst.name, Bits(out & known, known, _unknown(a, b).why), w)
        return
    m.put(dst.name, make(out) if np.ndim(out) else int(out) & M32, w)


def p2r(m, ins, mask, g, w):
    dst, _, a_o, k_o = ins.ops[:4]
    a, k = m.val(ins, a_o), k_o.value
    bits = 0
    pre = "UP" if ins.opcode == "UP2UR" else "P"
    for i in range(7):
        if k >> i & 1:
            p = m._resolve(m.regs.get(f"{pre}{i}", False))
            if isinstance(p, Unknown):
                m.put(dst.name, p, w)
                return
            bits = bits | (np.asarray(p, dtype=np.int64) << i if isinstance(p, np.ndarray) else int(p) << i)
    if isinstance(a, Unknown):
        m.put(dst.name, a, w)
        return
    r = (z64(a) & ~k & M32) | bits
    m.put(dst.name, make(r) if isinstance(r, np.ndarray) else r & M32, w)


def r2p(m, ins, mask, g, w):
    _, a_o, k_o = ins.ops[:3]
    a, k = m.val(ins, a_o), k_o.value
    for i in range(7):
        if k >> i & 1:
            if isinstance(a, Unknown):
                m.put(f"P{i}", a, w)
                continue
            b = (z64(a) >> i) & 1
            m.put(f"P{i}", _collapse(b != 0) if isinstance(b, np.ndarray) else bool(b), w)


def bmov(m, ins, mask, g, w):
    """BMOV saves a convergence barrier to a register (or restores it): reconvergence is not the emulator's
    business (lanes meet where their addresses meet), so the saved state is simply not computed."""
    d = ins.ops[0]
    if d.kind == "reg":
        m.put(d.name, Unknown(f"a convergence barrier's state (BMOV at /*{ins.pc:04x}*/)"), w)


def mov(m, ins, mask, g, w):
    m.put(ins.ops[0].name, m.val(ins, ins.ops[1]), w)


def s2r(m, ins, mask, g, w):
    sr = ins.ops[1].name
    if sr == "SRZ":
        m.put(ins.ops[0].name, 0, w)
        return
    v = m.sreg.get(sr)
    if v is None:
        m.fail(ins, f"the special register {sr} is not emulated")
    m.put(ins.ops[0].name, make(v) if isinstance(v, np.ndarray) else v, w)


def cs2r(m, ins, mask, g, w):
    src = ins.ops[1]
    if src.name != "SRZ":
        m.put_pair(ins.ops[0].name, Unknown(src.text), Unknown(src.text), w)
        return
    m.put_pair(ins.ops[0].name, 0, 0, w)


def ldc(m, ins, mask, g, w):
    dst, src = ins.ops[:2]
    lo = m.val(ins, src)
    if "64" in ins.mods:
        hi = m.val(ins, type(src)(src.kind, src.name, src.value + 4, regs=src.regs, text=src.text))
        m.put_pair(dst.name, lo, hi, w)
    else:
        m.put(dst.name, lo, w)


def hfma2(m, ins, mask, g, w):
    ops = ins.ops
    if len(ops) == 5 and ops[1].name == "RZ" and ops[2].name == "RZ" and ops[3].kind != "reg":
        try:
            h = [int(np.float16(float(o.text)).view(np.uint16)) for o in ops[3:5]]
            m.put(ops[0].name, h[0] << 16 | h[1], w)       # the first immediate is the high half
            return
        except ValueError:
            pass
    m.put(ops[0].name, Unknown(f"the result of {ins.full} at /*{ins.pc:04x}*/ (floating point)"), w)


# ------------------------------------------------------------------ memory
def _dsts(ins, width):
    d = ins.ops[0]
    if d.kind != "reg" or d.name in ("RZ",):
        return []
    n = max(1, width // 4)
    base = int(d.name[1:])
    return [f"R{base + j}" for j in range(n)]


def _mem_op(ins):
    return next(o for o in ins.ops if o.kind == "mem")


def ldg(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    width = _bytes(ins)
    o = _mem_op(ins)
    addr = m.address(ins, o, True)
    active = m._and(mask, g)
    m.check_aligned(ins, addr, active, width, "global")
    n = m.sectors_of(addr, active, width)
    m.sectors += n
    m.per_pc_sectors[ins.pc] += n
    m.note_tensor(ins.pc, addr, active)
    if m.tracer:
        m.tracer.memory(m, ins, "global", "read", active, addr, width)
    for r in _dsts(ins, width):
        m.put(r, Unknown(f"a value loaded from global memory at /*{ins.pc:04x}*/"), w)


def stg(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    addr = m.address(ins, _mem_op(ins), True)
    m.check_aligned(ins, addr, m._and(mask, g), _bytes(ins), "global")
    m.note_tensor(ins.pc, addr, m._and(mask, g))
    if m.tracer:
        m.tracer.memory(m, ins, "global", "write", m._and(mask, g), addr, _bytes(ins))


def ldgsts(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    width = _bytes(ins)
    mems = [o for o in ins.ops if o.kind == "mem"]
    sh = m.address(ins, mems[0], False)
    gl = m.address(ins, mems[1], True)
    active = m._and(mask, g)
    m.check_aligned(ins, sh, active, width, "shared")
    m.check_aligned(ins, gl, active, width, "global")
    n = m.copy_sectors(gl, sh, active, width)
    m.sectors += n
    m.per_pc_sectors[ins.pc] += n
    m.note_tensor(ins.pc, gl, active)
    if m.tracer:
        m.tracer.copy(m, ins, active, sh, gl, width)


def lds(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    width = _bytes(ins)
    addr = m.address(ins, _mem_op(ins), False)
    m.check_aligned(ins, addr, m._and(mask, g), width, "shared")
    if m.tracer:
        m.tracer.memory(m, ins, "shared", "read", m._and(mask, g), addr, width)
    for r in _dsts(ins, width):
        m.put(r, Unknown(f"a value loaded from shared memory at /*{ins.pc:04x}*/"), w)


def sts(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    addr = m.address(ins, _mem_op(ins), False)
    m.check_aligned(ins, addr, m._and(mask, g), _bytes(ins), "shared")
    if m.tracer:
        m.tracer.memory(m, ins, "shared", "write", m._and(mask, g), addr, _bytes(ins))


def ldl(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    width = _bytes(ins)
    addr = m.address(ins, _mem_op(ins), False)
    if m.tracer:
        m.tracer.memory(m, ins, "local", "read", m._and(mask, g), addr, width)
    for j, r in enumerate(_dsts(ins, width)):
        v = m.local.get(addr + 4 * j) if isinstance(addr, int) and not m.local_lost else None
        m.put(r, v if v is not None else Unknown(f"a value loaded from local memory at /*{ins.pc:04x}*/"), w)


def stl(m, ins, mask, g, w):
    if m._empty(m._and(mask, g)):       # no lane's guard is on: nothing is read or written
        return
    from .emulator import _bytes
    width = _bytes(ins)
    addr = m.address(ins, _mem_op(ins), False)
    if m.tracer:
        m.tracer.memory(m, ins, "local", "write", m._and(mask, g), addr, width)
    src = ins.ops[-1]
    if not isinstance(addr, int):       # lanes storing apart (a local array): the spill slots they may reach are
        from .emulator import ALL       # no longer known; those outside the lanes' range keep their values
        if not m.spill_slots:           # the rule before: no local value is known after it
            m.local_lost = True
            return
        active = m._and(mask, g)
        lanes = addr if active is ALL or active is True else addr[active]
        lo, hi = int(lanes.min()), int(lanes.max()) + width
        for a in [a for a in m.local if lo - 4 < a < hi]:
            del m.local[a]
        return
    base = int(src.name[1:]) if src.name != "RZ" else None
    for j in range(max(1, width // 4)):
        v = 0 if base is None else m.reg(f"R{base + j}")
        old = m.local.get(addr + 4 * j)
        m.local[addr + 4 * j] = v if w is True or old is None else select(w, v, old)


def voteu(m, ins, mask, g, w):
    """VOTEU.ALL / VOTEU.ANY UPd, Pa: one uniform predicate per warp, whether Pa is true in all (any) of the
    warp's executing lanes (lanes not executing count as true for ALL, false for ANY)."""
    dst, src = ins.ops[:2]
    mode = next((x for x in ins.mods if x in ("ALL", "ANY")), None)
    if mode is None:
        m.fail(ins, "a vote other than ALL or ANY is not emulated")
    p = m.pred(src)
    if isinstance(p, Unknown):
        m.put(dst.name, p, w)
        return
    from .emulator import ALL
    act = m._and(mask, g)
    if m._empty(act):                   # no lane executes it: nothing is written
        return
    lanes = np.ones(m.n, bool) if act is ALL or act is True else np.broadcast_to(np.asarray(act, bool), (m.n,))
    v = np.broadcast_to(np.asarray(p, bool), (m.n,))
    per_warp = (np.logical_and.reduceat(v | ~lanes, m.warp_starts) if mode == "ALL"
                else np.logical_or.reduceat(v & lanes, m.warp_starts))
    sizes = np.diff(np.append(m.warp_starts, m.n))
    m.put(dst.name, _collapse(np.repeat(per_warp, sizes)), w)


def register(table: dict) -> None:
    for op, h in {"IADD3": iadd3, "UIADD3": iadd3, "IDP": idp, "VIADD": viadd, "IMAD": imad, "UIMAD": imad, "LEA": lea,
                  "ULEA": lea, "SHF": shf, "USHF": shf, "LOP3": lop3, "ULOP3": lop3, "PLOP3": plop3,
                  "UPLOP3": plop3, "ISETP": isetp, "UISETP": isetp, "SEL": sel, "USEL": sel, "VIMNMX": minmax,
                  "VIADDMNMX": minmax, "IMNMX": minmax, "PRMT": prmt, "UPRMT": prmt, "P2R": p2r, "UP2UR": p2r, "R2P": r2p,
                  "BMOV": bmov, "MOV": mov, "UMOV": mov, "R2UR": mov, "S2R": s2r, "S2UR": s2r, "CS2R": cs2r, "LDC": ldc,
                  "ULDC": ldc, "HFMA2": hfma2, "LDG": ldg, "STG": stg, "LDGSTS": ldgsts, "LDS": lds,
                  "STS": sts, "LDL": ldl, "STL": stl, "VOTEU": voteu}.items():
        table[op] = h
