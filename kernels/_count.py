"""Exact per-level counts of a lowered PrimFunc at full size, without running it.

Every load and store of the lowered TensorIR is a *site* inside a loop nest (block and thread indices
are loops too) under a conjunction of predicates (remainder tests, padding tests). A site's element
count is the number of integer points of its loop nest that satisfy its predicates, times its vector
lanes. The predicates' conjuncts are grouped into independent components (no shared variables); each
component is enumerated with numpy and the counts multiply, so the cost depends on the predicates'
variables, not on the problem size: a loop nest without predicates is a plain product.

On CUDA the same enumeration, with threadIdx split into (warp, lane), gives warp instructions; the
32-byte sectors of each global load follow from the lanes' addresses, with the address terms that do not
involve the thread index reduced to a histogram of residues mod 8 floats (one sector).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._tirpy import ExprPrinter, Names, _visit, children, free_vars, is_sync, level_of, scope_of, tensor_of, \
    thread_extent
from .ops import OPS
from .records import Counts

WARP = 32
SECTOR = 8                # float32 elements per 32-byte sector
UNROLL_LIMIT = 512        # nvcc fully unrolls a constant loop whose unrolled body has up to about this many stores
_DEBUG = False
ENUM_LIMIT = 40_000_000   # points one enumeration may visit before it is done in chunks

EFFECTS = {
    "accumulator": "nvcc keeps a global accumulator (X[i] = X[i] + ... in a loop that does not move i) in a "
                   "register: the zero it was initialised with is forwarded (no load) and, for a kernel "
                   "argument with no branch in the loop, one store after the loop; otherwise every iteration "
                   "stores, and a loop too long to unroll reloads it every 4 iterations",
    "predicated": "a zero-padding guard (if_then_else) becomes a predicated load: the warp issues it even when no "
                  "lane is in bounds, and only in-bounds lanes fetch sectors",
    "cse": "nvcc fully unrolls small constant inner loops and loads each distinct address once per unrolled "
           "body (common-subexpression elimination)",
    "merge": "nvcc merges adjacent, provably 16-byte-aligned shared-memory reads of an unrolled body into "
             "64- and 128-bit loads (global loads are not merged: their pointer alignment is unknown)",
}


@dataclass
class Site:
    buffer: object
    name: str
    scope: str
    kind: str                       # read | write
    index: object                   # flat index expression (may be a Ramp)
    lanes: int
    loops: list                     # [(var, extent, is_thread, unroll cost)] outermost first
    conds: list                     # [(conjunct, kind 'if' | 'ite', loops enclosing it, id of its if)]
    threads: int
    unrolled: int = 0               # how many innermost loops nvcc unrolls around this site
    accumulate: bool = False        # store whose value reads the same element (X[i] = X[i] + ...)
    stores_in_body: set = field(default_factory=set)
    into: str = "global"                # scope of the store the access belongs to (a load's destination)


def _conjuncts(c) -> list:
    if type(c).__name__ == "And":
        return _conjuncts(c.a) + _conjuncts(c.b)
    if type(c).__name__ == "Call" and c.op.name.endswith("likely"):
        return _conjuncts(c.args[0])
    return [c]


def _not(c):
    from tvm import tirx
    return tirx.Not(c)


class _Collector:
    def __init__(self):
        self.sites: list[Site] = []
        self.blocks: list[int] = []
        self.threads = 1
        self.sole: list[bool] = []          # per enclosing serial loop: its body is one statement
        self.if_sole: dict = {}             # if id -> the sole flags of the serial loops around it
        self.if_tail: dict = {}             # if id -> nothing follows it in its kernel
        self.tail = True
        self.store_scope = "global"

    def stmt(self, s, loops, conds):
        t = type(s).__name__
        te = thread_extent(s)
        if te:
            tag, var, ext = te
            if tag.startswith("blockIdx"):
                self.blocks.append(ext)
                self.threads = 1
            else:
                self.threads *= ext
            self.stmt(s.body, loops + [(var, ext, True, 0)], conds)
            return
        if t == "For":
            ext = int(s.extent) if type(s.extent).__name__ == "IntImm" else None
            if ext is None:
                raise NotImplementedError("a loop with a non-constant extent in the lowered TensorIR")
            self.sole.append(type(s.body).__name__ != "SeqStmt")
            self.stmt(s.body, loops + [(s.loop_var, ext, False, ext * _stores(s.body))], conds)
            self.sole.pop()
        elif t == "IfThenElse":
            d, k = len(loops), id(s)
            self.if_sole[k] = list(self.sole)
            self.if_tail[k] = self.tail
            self.stmt(s.then_case, loops, conds + [(c, "if", d, k) for c in _conjuncts(s.condition)])
            if s.else_case is not None:
                self.stmt(s.else_case, loops, conds + [(_not(s.condition), "if", d, k + 1)])
        elif t == "BufferStore":
            self.store_scope = scope_of(s.buffer)
            self.expr(s.value, loops, conds)
            self.expr(s.indices[0], loops, conds)
            acc = _reads_same(s.value, s.buffer, s.indices[0])
            self.sites.append(Site(s.buffer, s.buffer.name, scope_of(s.buffer), "write", s.indices[0],
                                   _lanes(s.indices[0]), loops, conds, self.threads, accumulate=acc))
        elif t == "LetStmt":
            self.expr(s.value, loops, conds)
            self.stmt(s.body, loops, conds)
        elif t == "Evaluate":
            if not is_sync(s):
                self.expr(s.value, loops, conds)
        elif t == "SeqStmt":
            tail = self.tail
            for i, c in enumerate(s.seq):
                self.tail = tail and i == len(s.seq) - 1
                self.stmt(c, loops, conds)
            self.tail = tail
        else:
            for c in children(s):
                self.stmt(c, loops, conds)

    def expr(self, e, loops, conds):
        t = type(e).__name__
        if t in ("TensorLoad", "BufferLoad"):
            self.expr(e.indices[0], loops, conds)
            self.sites.append(Site(e.source, e.source.name, scope_of(e.source), "read", e.indices[0],
                                   _lanes(e.indices[0]), loops, conds, self.threads, into=self.store_scope))
            return
        if t == "Call" and e.op.name.endswith("if_then_else") or t == "Select":
            c, a, b = (e.args if t == "Call" else (e.condition, e.true_value, e.false_value))
            d, k = len(loops), id(e)
            self.expr(c, loops, conds)
            self.expr(a, loops, conds + [(x, "ite", d, k) for x in _conjuncts(c)])
            self.expr(b, loops, conds + [(_not(c), "ite", d, k + 1)])
            return
        subs = []
        _visit_children(e, subs.append)
        for x in subs:
            self.expr(x, loops, conds)


def _stores(s) -> int:
    """BufferStores one execution of s performs (conditions ignored): how big nvcc's unrolled body gets."""
    t = type(s).__name__
    if t == "BufferStore":
        return 1
    if t == "For":
        return int(s.extent) * _stores(s.body) if type(s.extent).__name__ == "IntImm" else 1 << 20
    return sum(_stores(c) for c in children(s))


def _visit_children(e, f):
    t = type(e).__name__
    for a in ("a", "b", "value", "base", "stride", "condition", "true_value", "false_value", "body"):
        if hasattr(e, a) and t not in ("IntImm", "FloatImm", "Var"):
            v = getattr(e, a)
            if v is not None and not isinstance(v, (int, float, str)):
                f(v)
    if t == "Call":
        for a in e.args:
            f(a)


def _lanes(idx) -> int:
    return int(idx.lanes) if type(idx).__name__ in ("Ramp", "Broadcast") else 1


def _reads_same(value, buf, idx) -> bool:
    found = []

    def v(n):
        if type(n).__name__ in ("TensorLoad", "BufferLoad") and n.source.same_as(buf) and \
                str(n.indices[0]) == str(idx):
            found.append(n)
    _visit(value, v)
    return bool(found)


# ------------------------------------------------------------------ enumeration helpers
class _Space:
    """Evaluate TIR expressions over a grid of loop variables with numpy broadcasting."""

    def __init__(self, names: Names):
        self.names = names
        self.printer = ExprPrinter(names, lambda ld, idx: "0")
        self.cache: dict = {}

    def eval(self, e, env: dict):
        key = (str(e), tuple(self.names(v, v.name) for v in free_vars(e)))   # same text, other variables
        code = self.cache.get(key)
        if code is None:
            code = compile(self.printer.__class__(self.names, lambda ld, idx: "0", array=True)(e), "<expr>", "eval")
            self.cache[key] = code
        return eval(code, {"np": np, "_ramp": _ramp, "_bcast": lambda v, n: v,
                           "_int": lambda x: np.asarray(x).astype(np.int64), "_float": lambda x: x,
                           "_bool": lambda x: x}, env)


def _ramp(base, stride, lanes):
    return base     # the counter handles lanes itself


def _vkey(v) -> str:
    return f"{v.name}@{id(v) if False else v.__hash__()}"


def _count_site(site: Site, space: _Space, drop: set[int], sectors: bool, conds: list | None = None):
    """(elements, warp instructions, sectors) of one site under `conds` (default: all its conditions);
    loops whose position is in `drop` are hoisted out."""
    loops = [(v, e, th) for i, (v, e, th, _) in enumerate(site.loops) if i not in drop]
    lvars = [v for v, _, _ in loops]

    def pos(v):
        for i, u in enumerate(lvars):
            if u.same_as(v):
                return i
        return None
    chosen = [c[0] for c in site.conds] if conds is None else conds
    conds = []
    for c in chosen:
        vs = [pos(v) for v in free_vars(c)]
        if any(p is None for p in vs):
            continue                   # mentions a hoisted loop: the hoisted access happens if any iteration does
        conds.append((c, set(vs)))
    tx = next((i for i, (_, _, th) in enumerate(loops) if th and not _is_block(loops[i][0])), None)
    # index terms (for sectors)
    terms = _terms(site.index) if sectors else []
    term_sets = []
    for coef, e in terms:
        vs = {pos(v) for v in free_vars(e)} if e is not None else set()
        if None in vs:
            vs.discard(None)
        term_sets.append(vs)
    # union-find over loop positions
    parent = list(range(len(loops)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(s):
        s = list(s)
        for x in s[1:]:
            parent[find(x)] = find(s[0])
    for _, vs in conds:
        if vs:
            union(vs)
    for vs in term_sets:
        if vs:
            union(vs)
    if tx is not None:
        union([tx])
    comps: dict[int, list[int]] = {}
    for i in range(len(loops)):
        comps.setdefault(find(i), []).append(i)
    elements = site.lanes
    inst = 1
    hist = np.zeros(SECTOR, dtype=object)
    hist[0] = 1
    lane_part = None
    for root, members in comps.items():
        mconds = [c for c, vs in conds if vs and find(next(iter(vs))) == root]
        mterms = [(coef, e) for (coef, e), vs in zip(terms, term_sets) if vs and find(next(iter(vs))) == root]
        has_tx = tx is not None and find(tx) == root
        if not mconds and not mterms and not has_tx:
            n = math.prod(loops[i][1] for i in members)
            elements *= n
            inst *= n
            hist = hist * n
            continue
        res = _enumerate(loops, members, mconds, mterms, tx if has_tx else None, site, space, sectors)
        elements *= res["points"]
        if has_tx:
            inst *= res["warp_points"]
            lane_part = res
        else:
            inst *= res["points"]
            if sectors:
                hist = _convolve(hist, res["hist"])
    if tx is None:                    # a CPU site, or a statement outside the thread loops
        inst = inst if site.threads <= 1 else inst
    secs = 0
    if sectors:
        const = sum(c for c, e in terms if e is None)
        hist = np.roll(hist, const % SECTOR)
        if lane_part is not None:
            secs = int(sum(int(hist[r]) * lane_part["sectors"][r] for r in range(SECTOR)))
        else:
            secs = int(sum(int(hist[r]) * _sectors_single(r, site.lanes) for r in range(SECTOR)))
    return int(elements), int(inst), secs


def _is_block(v) -> bool:
    return v.name.startswith("blockIdx")


def _sectors_single(r: int, lanes: int) -> int:
    return len({(r + j) // SECTOR for j in range(lanes)})


def _convolve(h1, h2):
    out = np.zeros(SECTOR, dtype=object)
    for a in range(SECTOR):
        if h1[a]:
            for b in range(SECTOR):
                if h2[b]:
                    out[(a + b) % SECTOR] += h1[a] * h2[b]
    return out


def _enumerate(loops, members, mconds, mterms, tx, site, space, sectors):
    """Points of one component satisfying its conjuncts; with the thread loop, also warp instructions and
    per-residue sector counts."""
    order = [i for i in members if i != tx] + ([tx] if tx is not None else [])
    exts = [loops[i][1] for i in order]
    if tx is not None:
        warps = -(-loops[tx][1] // WARP)
        exts = exts[:-1] + [warps * WARP]
    total = math.prod(exts)
    outer = order[0] if len(order) > 1 else None
    chunks = 1
    if total > ENUM_LIMIT and outer is not None:
        chunks = -(-total // ENUM_LIMIT)
    points = warp_points = 0
    hist = np.zeros(SECTOR, dtype=object)
    secs = np.zeros(SECTOR, dtype=object)
    ext0 = exts[0]
    step = -(-ext0 // chunks)
    for start in range(0, ext0, step):
        sub = [min(step, ext0 - start)] + exts[1:]
        env = {}
        grids = np.indices(sub, dtype=np.int64) if len(sub) > 0 else []
        for k, i in enumerate(order):
            g = grids[k] + (start if k == 0 else 0)
            env[space.names(loops[i][0], loops[i][0].name)] = g
        mask = np.ones(sub, dtype=bool)
        if tx is not None:
            mask &= env[space.names(loops[tx][0], loops[tx][0].name)] < loops[tx][1]
        for c in mconds:
            mask &= np.broadcast_to(np.asarray(space.eval(c, env), dtype=bool), sub)
        points += int(mask.sum())
        addr = None
        if sectors:
            addr = np.zeros(sub, dtype=np.int64)
            for coef, e in mterms:
                addr = addr + coef * np.broadcast_to(np.asarray(space.eval(e, env), dtype=np.int64), sub)
        if tx is None:
            if sectors:
                hist += np.bincount((addr[mask] % SECTOR).ravel(), minlength=SECTOR).astype(object)
            continue
        m = mask.reshape(-1, warps, WARP)
        warp_points += int(m.any(axis=-1).sum())
        if sectors:
            a = addr.reshape(-1, warps, WARP)[..., None] + site_stride(site) * np.arange(site.lanes)
            a = a.reshape(-1, WARP * site.lanes)
            mm = np.repeat(m.reshape(-1, WARP), site.lanes, axis=1)
            keep = mm.any(axis=1)
            a, mm = a[keep], mm[keep]
            for r in range(SECTOR):
                s = np.where(mm, (a + r) // SECTOR, np.iinfo(np.int64).max)
                s.sort(axis=1)
                distinct = (np.diff(s, axis=1) != 0) & (s[:, 1:] != np.iinfo(np.int64).max)
                secs[r] += int(distinct.sum() + (s[:, 0] != np.iinfo(np.int64).max).sum())
    return {"points": points, "warp_points": warp_points, "hist": hist, "sectors": secs}


def site_stride(site: Site) -> int:
    idx = site.index
    if type(idx).__name__ == "Ramp":
        return int(idx.stride)
    return 0


def _terms(idx) -> list[tuple[int, object]]:
    """Flatten an index into additive terms (coefficient, expression or None for a constant)."""
    if type(idx).__name__ == "Ramp":
        return _terms(idx.base)
    if type(idx).__name__ == "Broadcast":
        return _terms(idx.value)
    t = type(idx).__name__
    if t == "Add":
        return _terms(idx.a) + _terms(idx.b)
    if t == "Sub":
        return _terms(idx.a) + [(-c, e) for c, e in _terms(idx.b)]
    if t == "IntImm":
        return [(int(idx.value), None)]
    if t == "Mul":
        for x, y in ((idx.a, idx.b), (idx.b, idx.a)):
            if type(y).__name__ == "IntImm":
                return [(c * int(y.value), e) for c, e in _terms(x)]
    return [(1, idx)]


# ------------------------------------------------------------------ nvcc effects
def _uses(e, v) -> bool:
    return any(u.same_as(v) for u in free_vars(e))


def _hoisted(site: Site) -> set[int]:
    """Innermost serial loops that do not move an accumulator's address."""
    drop = set()
    for i in range(len(site.loops) - 1, -1, -1):
        v, _, th, _ = site.loops[i]
        if th or _uses(site.index, v):
            break
        drop.add(i)
    return drop


def _unrolled(site: Site) -> set[int]:
    """Innermost serial loops nvcc unrolls fully: each one's body, unrolled, stays under UNROLL_LIMIT stores."""
    out = set()
    for i in range(len(site.loops) - 1, -1, -1):
        _, _, th, cost = site.loops[i]
        if th or cost > UNROLL_LIMIT:
            break
        out.add(i)
    return out


def _costly(e) -> bool:
    """Integer division or modulo by a constant that is not a power of two: many instructions per address."""
    found = []

    def v(n):
        if type(n).__name__ in ("FloorDiv", "FloorMod") and type(n.b).__name__ == "IntImm":
            b = int(n.b.value)
            if b & (b - 1):
                found.append(n)
    _visit(e, v)
    return bool(found)


def _issue_conds(site: Site, unrolled: set[int], if_sole: dict, if_tail: dict) -> tuple[list, set[int]]:
    """The conditions that decide whether a warp issues the access, and the unrolled loops across which its
    copies share one basic block (where nvcc can share or merge loads).

    Statement `if`s: a test on unrolled loops only is decided at compile time. In a loop nvcc does not
    unroll, a test that does not change with the loop becomes a branch (a warp with no active lane skips the
    access), one that changes is predicated (the warp issues it anyway). In unrolled code, adjacent copies of
    an `if` with the same test merge into one block: a block of 8 or more accesses becomes a branch, a smaller
    one is predicated. A zero-padding select under an `if` that fills registers becomes one branch on both
    tests. A zero-padding select elsewhere is predicated, except for a test the whole warp shares (no
    threadIdx) that stays fixed across the innermost unrolled loop: nvcc branches on that part. A padding
    select whose address needs division by a non-power-of-two is branched too (too costly to predicate)."""
    uvars = [site.loops[i][0] for i in unrolled]
    tx = [l[0] for l in site.loops if l[2] and not _is_block(l[0])]
    inner_u = site.loops[max(unrolled)][0] if unrolled else None
    groups: dict = {}
    for c, kind, depth, key in site.conds:
        groups.setdefault((kind, key), (depth, []))[1].append(c)
    nested_ite = any(k == "ite" for k, _ in groups)
    keep, combined = [], False
    region = set(unrolled)
    for (kind, key), (depth, cs) in sorted(groups.items(), key=lambda g: g[0][0] != "if"):
        vs = [v for c in cs for v in free_vars(c)]
        if vs and all(any(u.same_as(v) for u in uvars) for v in vs):
            keep += cs
            continue
        if kind == "ite":
            if combined:
                keep += cs
                continue
            for c in cs:
                uniform = not any(_uses(c, t) for t in tx)
                if uniform and inner_u is not None and not _uses(c, inner_u) and any(_uses(c, u) for u in uvars):
                    keep.append(c)
            continue
        serial = [i for i in range(depth) if not site.loops[i][2]]
        if nested_ite and (site.into == "local" or _costly(site.index)):
            keep += cs                  # guarded select into registers, or with costly addressing: a branch
            combined = True
        elif serial and serial[-1] not in unrolled:
            if not any(_uses(c, site.loops[serial[-1]][0]) for c in cs):
                keep += cs
        else:
            sole = if_sole.get(key, [])
            block, merged = 1, set()
            for j, i in enumerate(reversed(serial)):
                is_sole = len(sole) > len(serial) - 1 - j and sole[len(serial) - 1 - j]
                if i not in unrolled or not is_sole or any(_uses(c, site.loops[i][0]) for c in cs):
                    break
                merged.add(i)
                block *= site.loops[i][1]
            invariant = not any(_uses(c, site.loops[i][0]) for i in serial for c in cs)
            if block >= 8 or (if_tail.get(key) and invariant):
                keep += cs              # a branch, or `if (!test) return` at the kernel's end
            region = {i for i in region if i >= depth or i in merged}
    for c, kind, depth, _ in site.conds:
        used = [i for i in unrolled if _uses(c, site.loops[i][0])]
        if used:
            region = {i for i in region if i > max(used)}
    return keep, region


def _instance(site: Site, space: _Space, unrolled: set[int], merge: bool):
    """(accesses per unrolled body, instructions per unrolled body) after CSE and, for shared, merging;
    None when the body's addresses do not separate from the outer loops'."""
    uvars = [site.loops[i][0] for i in sorted(unrolled)]
    if not uvars or site.lanes > 1:
        return None

    def has_u(e):
        return any(any(u.same_as(v) for u in uvars) for v in free_vars(e))
    if any(has_u(c[0]) for c in site.conds):
        return None                     # each unrolled copy has its own predicate: no sharing
    inner, outer = [], []
    for coef, e in _terms(site.index):
        if e is None or not has_u(e):
            outer.append((coef, e))
        elif any(not any(u.same_as(v) for u in uvars) for v in free_vars(e)):
            return None                 # a term mixes unrolled and outer variables
        else:
            inner.append((coef, e))
    exts = [site.loops[i][1] for i in sorted(unrolled)]
    grids = np.indices(exts, dtype=np.int64)
    env = {space.names(v, v.name): g for v, g in zip(uvars, grids)}
    vals = np.zeros(exts, dtype=np.int64)
    for coef, e in inner:
        vals = vals + coef * np.broadcast_to(np.asarray(space.eval(e, env), dtype=np.int64), exts)
    distinct = np.unique(vals)
    total = int(np.prod(exts))
    if not merge:
        return total, len(distinct)
    align = next((w for w in (4, 2) if all(c % w == 0 for c, e in outer)), 1)
    left = set(distinct.tolist())
    n = 0
    for width in (4, 2):
        if width > align:
            continue
        for a in sorted(left):
            if a % width == 0 and all(a + j in left for j in range(width)):
                for j in range(width):
                    left.discard(a + j)
                n += 1
    return total, n + len(left)


def _accumulators(sites: list[Site], params: set[str]) -> dict[int, tuple[str, object]]:
    """For each global accumulator X[i] = X[i] + ... (and its load and its zero-initialisation), how nvcc
    treats it: site id -> (effect, hoisted loops or None)."""
    out = {}
    for acc in sites:
        if not (acc.accumulate and acc.scope == "global"):
            continue
        hoist = _hoisted(acc)
        if not hoist:
            continue
        key = (acc.name, str(acc.index))
        same = [s for s in sites if (s.name, str(s.index)) == key and s is not acc
                and len(s.loops) <= len(acc.loops)
                and all(a[0].same_as(b[0]) for a, b in zip(s.loops, acc.loops))]
        load = next((s for s in same if s.kind == "read" and len(s.loops) == len(acc.loops)), None)
        init = next((s for s in same if s.kind == "write" and not s.accumulate), None)
        unr = _unrolled(acc)
        all_unrolled = hoist <= unr
        first = min(hoist)
        branch = any(k == "if" and d > first for _, k, d, _ in acc.conds)
        guarded = any(c[1] == "ite" for s in sites if s.kind == "read" and len(s.loops) == len(acc.loops)
                      and all(a[0].same_as(b[0]) for a, b in zip(s.loops, acc.loops)) for c in s.conds)
        if tensor_of(acc.name) in params and not branch:
            out[id(acc)] = ("promoted", hoist)
            if load is not None:
                out[id(load)] = ("forwarded", None)
            if init is not None and all_unrolled and not guarded:
                out[id(init)] = ("dead", None)
        else:
            if load is not None:
                out[id(load)] = ("forwarded", None) if all_unrolled else ("reload4", hoist)
    return out


def count(op: str, shape: dict, knobs, target: str, func) -> Counts:
    col = _Collector()
    col.stmt(func.body, [], [])
    space = _Space(Names())
    cuda = target == "cuda"
    params = {p.name for p in func.params}
    per_tensor: dict = {}
    ncu_inst = {"global_ld": 0, "global_st": 0, "shared_ld": 0, "shared_st": 0}
    vector_inst = {"global": 0, "shared": 0, "register": 0}
    scalar_inst = {"global": 0, "shared": 0, "register": 0}
    sectors = 0
    used = set()
    acc = _accumulators(col.sites, params) if cuda else {}
    for site in col.sites:
        level = level_of(site.scope)
        tensor = tensor_of(site.name)
        el, wi, _ = _count_site(site, space, set(), False)
        per_tensor.setdefault(tensor, {lv: {"read": 0, "write": 0} for lv in ("global", "shared", "register")})
        per_tensor[tensor][level][site.kind] += el
        (vector_inst if site.lanes > 1 else scalar_inst)[level] += wi
        if not cuda or level == "register":
            continue
        gl = level == "global"
        want_sectors = gl and site.kind == "read"
        unr = _unrolled(site)
        issue, region = _issue_conds(site, unr, col.if_sole, col.if_tail)
        effect, hoist = acc.get(id(site), (None, None))
        if effect in ("forwarded", "dead"):
            inst_n, sec_n = 0, 0
            used.add("accumulator")
        elif effect in ("promoted", "reload4"):
            _, inst_n, _ = _count_site(site, space, hoist, False, issue)
            _, _, sec_n = _count_site(site, space, hoist, want_sectors)
            if effect == "reload4":
                inner = max(hoist)
                inst_n *= -(-site.loops[inner][1] // 4)
                sec_n *= -(-site.loops[inner][1] // 4)
            used.add("accumulator")
        else:
            body = None
            if site.kind == "read":
                body = _instance(site, space, region, merge=not gl)
                if body is not None and body[1] >= body[0]:
                    body = None
            if body is not None:           # one unrolled body issues body[1] loads instead of body[0]
                used.add("cse" if gl else "merge")
                _, inst_n, _ = _count_site(site, space, region, False, issue)
                _, _, sec_n = _count_site(site, space, region, want_sectors)
                inst_n *= body[1]
                sec_n *= body[1]
            else:
                _, inst_n, _ = _count_site(site, space, set(), False, issue)
                _, _, sec_n = _count_site(site, space, set(), want_sectors) if want_sectors else (0, 0, 0)
            if any(c[1] == "ite" for c in site.conds) and site.kind == "read":
                used.add("predicated")
        if _DEBUG:
            print(f"  {site.name:16s} {site.kind:5s} inst={inst_n:>10} sec={sec_n:>10} effect={effect} "
                  f"region={sorted(region)} issue={[str(c) for c in issue]}")
        ncu_inst[f"{'global' if gl else 'shared'}_{'ld' if site.kind == 'read' else 'st'}"] += inst_n
        if want_sectors:
            sectors += sec_n
    o = OPS[op]
    ncu = {}
    if cuda:
        ncu = {"smsp__inst_executed_op_global_ld.sum": ncu_inst["global_ld"],
               "smsp__inst_executed_op_global_st.sum": ncu_inst["global_st"],
               "smsp__inst_executed_op_shared_ld.sum": ncu_inst["shared_ld"],
               "smsp__inst_executed_op_shared_st.sum": ncu_inst["shared_st"],
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": sectors}
    return Counts(per_tensor=per_tensor,
                  instructions={"scalar": scalar_inst, "vector": vector_inst},
                  ncu=ncu, effects=tuple(EFFECTS[e] for e in sorted(used)),
                  flops=o.flops(shape), min_bytes=o.min_bytes(shape),
                  blocks=sum(col.blocks) if col.blocks else 1, threads=col.threads,
                  method="closed-form products, with the predicates' variables enumerated per independent "
                         "component")
