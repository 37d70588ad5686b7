"""Exact per-level counts of a lowered PrimFunc at full size, without running it.

Every load and store of the lowered TensorIR is a *site* inside a loop nest (block and thread indices
are loops too) under a conjunction of predicates (remainder tests, padding tests). A site's element
count is the number of integer points of its loop nest that satisfy its predicates, times its vector
lanes. The predicates' conjuncts are grouped into independent components (no shared variables); each
component is enumerated with numpy and the counts multiply, so the cost depends on the predicates'
variables, not on the problem size: a loop nest without predicates is a plain product.

On CUDA the same enumeration, with threadIdx split into (warp, lane), gives warp instructions: what the
lowered TensorIR asks for. What the SASS executes is counted by the machine view in kernels/sass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._tirpy import ExprPrinter, Names, children, free_vars, is_sync, level_of, scope_of, tensor_of, \
    thread_extent
from .ops import OPS
from .records import Counts

WARP = 32
ENUM_LIMIT = 40_000_000   # points one enumeration may visit (in chunks) before it declines
ENUM_FAST = 2_000_000     # above this many points, count one loop in closed form instead of visiting it
# Points one count may still visit, over all its enumerations (None: no bound). The tuner sets it (visiting): a
# random candidate at 4206x347x642 (32x128 tiles of 1x32 patches) took 309 s to count, and its search waited.
_BUDGET: list = [None]


class visiting:
    """Within it, a count that would visit more than `points` loop points declines (NotImplementedError)."""

    def __init__(self, points: int | None):
        self.points = points

    def __enter__(self):
        self.keep, _BUDGET[0] = _BUDGET[0], self.points
        return self

    def __exit__(self, *exc):
        _BUDGET[0] = self.keep


def _spend(points: int) -> None:
    if _BUDGET[0] is not None:
        _BUDGET[0] -= points
        if _BUDGET[0] < 0:
            raise NotImplementedError("more loop points than the count may visit here")


@dataclass
class Site:
    buffer: object
    name: str
    scope: str
    kind: str                       # read | write
    index: object                   # flat index expression (may be a Ramp)
    lanes: int
    loops: list                     # [(var, extent, is_thread)] outermost first
    conds: list                     # [(conjunct, kind 'if' | 'ite', loops enclosing it, id of its if)]
    threads: int


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
    """Every load and store of a lowered PrimFunc, with the loops and conditions around it."""

    def __init__(self):
        self.sites: list[Site] = []
        self.blocks: list[int] = []
        self.threads = 1

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
            self.stmt(s.body, loops + [(var, ext, True)], conds)
            return
        if t == "For":
            ext = int(s.extent) if type(s.extent).__name__ == "IntImm" else None
            if ext is None:
                raise NotImplementedError("a loop with a non-constant extent in the lowered TensorIR")
            self.stmt(s.body, loops + [(s.loop_var, ext, False)], conds)
        elif t == "IfThenElse":
            d, k = len(loops), s.__chandle__()      # id() of a TVM wrapper is reused once it is freed
            self.stmt(s.then_case, loops, conds + [(c, "if", d, k) for c in _conjuncts(s.condition)])
            if s.else_case is not None:
                self.stmt(s.else_case, loops, conds + [(_not(s.condition), "if", d, k + 1)])
        elif t == "BufferStore":
            self.expr(s.value, loops, conds)
            self.expr(s.indices[0], loops, conds)
            self.sites.append(Site(s.buffer, s.buffer.name, scope_of(s.buffer), "write", s.indices[0],
                                   _lanes(s.indices[0], s.buffer), loops, conds, self.threads))
        elif t == "LetStmt":
            self.expr(s.value, loops, conds)
            self.stmt(s.body, loops, conds)
        elif t == "Evaluate":
            if not is_sync(s):
                self.expr(s.value, loops, conds)
        else:
            for c in children(s):
                self.stmt(c, loops, conds)

    def expr(self, e, loops, conds):
        t = type(e).__name__
        if t in ("TensorLoad", "BufferLoad"):
            self.expr(e.indices[0], loops, conds)
            self.sites.append(Site(e.source, e.source.name, scope_of(e.source), "read", e.indices[0],
                                   _lanes(e.indices[0], e.source), loops, conds, self.threads))
            return
        if t == "Call" and e.op.name.endswith("if_then_else") or t == "Select":
            c, a, b = (e.args if t == "Call" else (e.condition, e.true_value, e.false_value))
            d, k = len(loops), e.__chandle__()
            self.expr(c, loops, conds)
            self.expr(a, loops, conds + [(x, "ite", d, k) for x in _conjuncts(c)])
            self.expr(b, loops, conds + [(_not(c), "ite", d, k + 1)])
            return
        subs = []
        _visit_children(e, subs.append)
        for x in subs:
            self.expr(x, loops, conds)


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


def _lanes(idx, buf=None) -> int:
    """Scalars one access touches: a Ramp/Broadcast index's lanes, times the lanes of a vector-typed buffer
    (StorageRewrite turns a local float array into float32x4 elements)."""
    n = int(idx.lanes) if type(idx).__name__ in ("Ramp", "Broadcast") else 1
    dt = str(getattr(buf, "dtype", "")) if buf is not None else ""
    if "x" in dt:
        n *= int(dt.rsplit("x", 1)[1])
    return n


# ------------------------------------------------------------------ enumeration helpers
class _Space:
    """Evaluate TIR expressions over a grid of loop variables with numpy broadcasting."""

    def __init__(self, names: Names):
        self.names = names
        self.printer = ExprPrinter(names, lambda ld, idx: "0")
        self.cache: dict = {}
        self.compressed: dict = {}

    def eval(self, e, env: dict, subst: dict | None = None):
        key = (str(e), tuple(self.names(v, v.name) for v in free_vars(e)), tuple(sorted((subst or {}).items())))
        code = self.cache.get(key)
        if code is None:
            code = compile(ExprPrinter(self.names, lambda ld, idx: "0", True, subst)(e), "<expr>", "eval")
            self.cache[key] = code
        return eval(code, {"np": np, "_ramp": _ramp, "_bcast": lambda v, n: v,
                           "_int": lambda x: np.asarray(x).astype(np.int64), "_float": lambda x: x,
                           "_bool": lambda x: x}, env)


def _ramp(base, stride, lanes):
    return base     # the counter handles lanes itself


def _count_site(site: Site, space: _Space, drop: set[int], conds: list | None = None):
    """(elements, warp instructions) of one site under `conds` (default: all its conditions); loops whose
    position is in `drop` are hoisted out."""
    loops = [(v, e, th) for i, (v, e, th) in enumerate(site.loops) if i not in drop]
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
    if tx is not None:
        union([tx])
    comps: dict[int, list[int]] = {}
    for i in range(len(loops)):
        comps.setdefault(find(i), []).append(i)
    elements = site.lanes
    inst = 1
    for root, members in comps.items():
        mconds = [c for c, vs in conds if vs and find(next(iter(vs))) == root]
        has_tx = tx is not None and find(tx) == root
        if not mconds and not has_tx:
            n = math.prod(loops[i][1] for i in members)
            elements *= n
            inst *= n
            continue
        points, warp_points = _enumerate(loops, members, mconds, tx if has_tx else None, space)
        elements *= points
        inst *= warp_points if has_tx else points
    return int(elements), int(inst)


def _is_block(v) -> bool:
    return v.name.startswith("blockIdx")


_CMP = {"LT": ("le", -1), "LE": ("le", 0), "GT": ("ge", 1), "GE": ("ge", 0)}


def _linear(cond, f):
    """cond as (kind 'le'|'ge', bound, coefficient of f, other terms) meaning coef*f + others <=/>= bound;
    None when cond is not a comparison that is linear in f."""
    t = type(cond).__name__
    if t not in _CMP:
        return None
    kind, bound = _CMP[t]
    cf, rest = 0, []
    for c, e in _terms(cond.a) + [(-c, e) for c, e in _terms(cond.b)]:
        if e is not None and type(e).__name__ == "Var" and e.same_as(f):
            cf += c
        elif e is not None and _uses(e, f):
            return None
        else:
            rest.append((c, e))
    return kind, bound, cf, rest


def _value(terms, space, env, shape):
    out = np.zeros(shape, dtype=np.int64)
    for c, e in terms:
        out = out + (c if e is None else c * np.broadcast_to(np.asarray(space.eval(e, env), dtype=np.int64), shape))
    return out


def _enumerate_free(loops, members, mconds, tx, space, f):
    """(points, warp instructions) as _enumerate gives them, without visiting the loop f: every conjunct is
    linear in f, so each point of the other loops admits one interval of f, counted in closed form. Warp
    instructions take the union of the lanes' intervals. None where a test is not linear in f or the other
    loops are too many points."""
    lin = [_linear(c, loops[f][0]) for c in mconds]
    if any(x is None for x in lin):
        return None
    order = [i for i in members if i not in (tx, f)] + ([tx] if tx is not None else [])
    exts = [loops[i][1] for i in order]
    if tx is not None:
        exts = exts[:-1] + [-(-loops[tx][1] // WARP) * WARP]
    if math.prod(exts) > ENUM_LIMIT:
        return None
    _spend(math.prod(exts))
    grids = np.indices(exts, dtype=np.int64)
    env = {space.names(loops[i][0], loops[i][0].name): grids[k] for k, i in enumerate(order)}
    lo = np.zeros(exts, dtype=np.int64)
    hi = np.full(exts, loops[f][1] - 1, dtype=np.int64)
    mask = np.ones(exts, dtype=bool)
    if tx is not None:
        mask &= env[space.names(loops[tx][0], loops[tx][0].name)] < loops[tx][1]
    for kind, bound, cf, rest in lin:
        r = _value(rest, space, env, exts)
        lim = bound - r                                  # cf * f  <= lim  (le)   or  >= lim  (ge)
        if cf == 0:
            mask &= (0 <= lim) if kind == "le" else (0 >= lim)
        elif (kind == "le") == (cf > 0):
            hi = np.minimum(hi, lim // cf)               # an upper limit on f
        else:
            lo = np.maximum(lo, -((-lim) // cf))         # a lower limit on f
    cnt = np.where(mask, np.maximum(hi - lo + 1, 0), 0)
    if tx is None:
        return int(cnt.sum()), 0
    big = np.iinfo(np.int64).max // 4
    L = np.where(cnt > 0, lo, big).reshape(-1, WARP)
    H = np.where(cnt > 0, hi, big - 1).reshape(-1, WARP)
    idx = np.argsort(L, axis=1)
    L, H = np.take_along_axis(L, idx, 1), np.take_along_axis(H, idx, 1)
    prev = np.concatenate([np.full((L.shape[0], 1), -1, dtype=np.int64),
                           np.maximum.accumulate(H, axis=1)[:, :-1]], axis=1)
    return int(cnt.sum()), int(np.maximum(H - np.maximum(L, prev + 1) + 1, 0).sum())


def _single_var_parts(e, v, out: list) -> bool:
    """Collect the largest sub-expressions of e that involve v and nothing else; False when v meets another
    variable inside a non-linear operation (then v cannot be summarised on its own)."""
    vs = free_vars(e)
    if not any(u.same_as(v) for u in vs):
        return True
    if len(vs) == 1:
        out.append(e)
        return True
    t = type(e).__name__
    if t in ("Add", "Sub", "LT", "LE", "GT", "GE", "EQ", "NE", "And", "Or"):
        return _single_var_parts(e.a, v, out) and _single_var_parts(e.b, v, out)
    if t == "Mul" and (type(e.a).__name__ == "IntImm" or type(e.b).__name__ == "IntImm"):
        return _single_var_parts(e.a, v, out) and _single_var_parts(e.b, v, out)
    if t == "Not":
        return _single_var_parts(e.a, v, out)
    return False



def _compress(loops, i, mconds, space):
    """A long loop that the tests see only through a few values (a fused block index seen as its row and
    column, b // 128 % 128 and b % 128): the distinct value tuples and how many iterations give each, found
    in one vectorised pass over the loop. None when that does not shrink the loop."""
    v, ext = loops[i][0], loops[i][1]
    parts: list = []
    for c in mconds:
        if not _single_var_parts(c, v, parts):
            return None
    if not parts:
        return None               # no test sees it: nothing to compress
    uniq = {str(p): p for p in parts}
    name = space.names(v, v.name)
    memo = (name, ext, tuple(uniq))
    if memo in space.compressed:          # sites of one kernel often see a block index the same way
        return space.compressed[memo]
    space.compressed[memo] = result = _compress_pass(ext, i, uniq, space, name)
    return result


def _compress_pass(ext, i, uniq, space, name):

    def columns(start):
        env = {name: np.arange(start, min(ext, start + (1 << 22)), dtype=np.int64)}
        n = env[name].shape
        return [np.broadcast_to(np.asarray(space.eval(p, env), dtype=np.int64), n) for p in uniq.values()]
    lo = hi = None
    for start in range(0, ext, 1 << 22):       # pass 1: the range of each column
        cs = columns(start)
        mn, mx = [c.min() for c in cs], [c.max() for c in cs]
        lo = mn if lo is None else [min(a, b) for a, b in zip(lo, mn)]
        hi = mx if hi is None else [max(a, b) for a, b in zip(hi, mx)]
    radix = [int(b - a + 1) for a, b in zip(lo, hi)]
    if math.prod(radix) > 1 << 26:
        return None
    counts = np.zeros(math.prod(radix), dtype=np.int64)
    for start in range(0, ext, 1 << 22):       # pass 2: how many iterations give each value tuple
        key = np.zeros(1, dtype=np.int64)
        for c, a, r in zip(columns(start), lo, radix):
            key = key * r + (c - a)
        counts += np.bincount(key, minlength=len(counts))
    nz = np.nonzero(counts)[0]
    if len(nz) * 4 > ext:
        return None
    keys, rem = [], nz.copy()
    for a, r in zip(reversed(lo), reversed(radix)):
        keys.append(rem % r + a)
        rem //= r
    keys = np.stack(list(reversed(keys)), axis=1)
    counts = counts[nz]
    subst = {t: f"_part{k}" for k, t in enumerate(uniq)}
    return {"i": i, "keys": keys, "counts": counts, "subst": subst}


def _enumerate_compressed(loops, members, mconds, tx, space, comp):
    """_enumerate with loop comp['i'] replaced by its distinct value tuples, each weighted by its count."""
    ci = comp["i"]
    order = [i for i in members if i not in (tx, ci)] + ([tx] if tx is not None else [])
    exts = [len(comp["keys"])] + [loops[i][1] for i in order]
    if tx is not None:
        warps = -(-loops[tx][1] // WARP)
        exts = exts[:-1] + [warps * WARP]
    if math.prod(exts) > ENUM_LIMIT:
        return None
    _spend(math.prod(exts))
    grids = np.indices(exts, dtype=np.int64)
    env = {space.names(loops[i][0], loops[i][0].name): grids[k + 1] for k, i in enumerate(order)}
    for k, name in enumerate(comp["subst"].values()):
        env[name] = comp["keys"][:, k][grids[0]]
    weight = comp["counts"][grids[0]]
    mask = np.ones(exts, dtype=bool)
    if tx is not None:
        mask &= env[space.names(loops[tx][0], loops[tx][0].name)] < loops[tx][1]
    for c in mconds:
        mask &= np.broadcast_to(np.asarray(space.eval(c, env, comp["subst"]), dtype=bool), exts)
    points = int((mask * weight).sum())
    if tx is None:
        return points, 0
    m = mask.reshape(-1, warps, WARP)
    wrow = weight.reshape(-1, warps, WARP)[..., 0]
    return points, int((m.any(axis=-1) * wrow).sum())


def _enumerate(loops, members, mconds, tx, space):
    """(points, warp instructions) of one component: its points satisfying its conjuncts and, with the thread
    loop, the warps with a lane among them (0 without it). A long loop is counted in closed form where the
    tests allow (_enumerate_free) or shrunk to its distinct values (_compress); otherwise every point is
    visited, in chunks."""
    big = [i for i in members if i != tx and loops[i][1] >= 64]
    total = math.prod(loops[i][1] for i in members)
    if total > ENUM_FAST and big:
        for f in sorted(big, key=lambda i: -loops[i][1]):
            res = _enumerate_free(loops, members, mconds, tx, space, f)
            if res is not None:
                return res
    comp = None
    if total > ENUM_FAST:
        for i in sorted(big, key=lambda i: -loops[i][1]):
            comp = _compress(loops, i, mconds, space)
            if comp is not None:
                break
    if comp is not None:
        res = _enumerate_compressed(loops, members, mconds, tx, space, comp)
        if res is None:             # its distinct values times the other loops are still too many to visit
            raise NotImplementedError("a bounds test over more loop points than the counter visits")
        return res
    order = [i for i in members if i != tx] + ([tx] if tx is not None else [])
    exts = [loops[i][1] for i in order]
    if tx is not None:
        warps = -(-loops[tx][1] // WARP)
        exts = exts[:-1] + [warps * WARP]
    total = math.prod(exts)
    _spend(total)
    outer = order[0] if len(order) > 1 else None
    chunks = 1
    if total > ENUM_LIMIT and outer is not None:
        chunks = -(-total // ENUM_LIMIT)
    points = warp_points = 0
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
        if tx is not None:
            warp_points += int(mask.reshape(-1, warps, WARP).any(axis=-1).sum())
    return points, warp_points


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


def _uses(e, v) -> bool:
    return any(u.same_as(v) for u in free_vars(e))


# ------------------------------------------------------------------ entry point
def count(op: str, shape: dict, knobs, target: str, func) -> Counts:
    """What the schedule asks for at each level: element reads and writes per tensor, and the accesses the
    lowered TensorIR makes (warp-level on CUDA: one per warp with a lane in range, a vector access once).
    The compiler changes these (the SASS view, kernels/sass, counts what the machine executes)."""
    col = _Collector()
    col.stmt(func.body, [], [])
    space = _Space(Names())
    per_tensor: dict = {}
    asked: dict = {}
    for site in col.sites:
        level, tensor = level_of(site.scope), tensor_of(site.name)
        el, wi = _count_site(site, space, set())
        for out, n in ((per_tensor, el), (asked, wi)):
            out.setdefault(tensor, {lv: {"read": 0, "write": 0} for lv in ("global", "shared", "register")})
            out[tensor][level][site.kind] += n
    o = OPS[op]
    return Counts(per_tensor=per_tensor, instructions={"asked": asked}, ncu={}, differences=(),
                  flops=o.flops(shape), min_bytes=o.min_bytes(shape),
                  blocks=sum(col.blocks) if col.blocks else 1, threads=col.threads,
                  method="closed-form products, with the predicates' variables enumerated per independent "
                         "component")
