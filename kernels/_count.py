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
UNROLL_LIMIT = 256        # nvcc fully unrolls constant inner loop nests up to about this many iterations
ENUM_LIMIT = 40_000_000   # points one enumeration may visit before it is done in chunks

EFFECTS = {
    "accumulator": "nvcc keeps a global accumulator (X[i] = X[i] + ... in a loop that does not move i) in a "
                   "register: one load before the loop and one store after it",
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
    loops: list                     # [(var, extent, is_thread)] outermost first
    conds: list                     # conjuncts (TIR boolean expressions)
    threads: int
    unrolled: int = 0               # how many innermost loops nvcc unrolls around this site
    accumulate: bool = False        # store whose value reads the same element (X[i] = X[i] + ...)
    stores_in_body: set = field(default_factory=set)


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
            c = _conjuncts(s.condition)
            self.stmt(s.then_case, loops, conds + c)
            if s.else_case is not None:
                self.stmt(s.else_case, loops, conds + [_not(s.condition)])
        elif t == "BufferStore":
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
        else:
            for c in children(s):
                self.stmt(c, loops, conds)

    def expr(self, e, loops, conds):
        t = type(e).__name__
        if t in ("TensorLoad", "BufferLoad"):
            self.expr(e.indices[0], loops, conds)
            self.sites.append(Site(e.source, e.source.name, scope_of(e.source), "read", e.indices[0],
                                   _lanes(e.indices[0]), loops, conds, self.threads))
            return
        if t == "Call" and e.op.name.endswith("if_then_else"):
            c, a, b = e.args
            self.expr(c, loops, conds)
            self.expr(a, loops, conds + _conjuncts(c))
            self.expr(b, loops, conds + [_not(c)])
            return
        if t == "Select":
            self.expr(e.condition, loops, conds)
            self.expr(e.true_value, loops, conds + _conjuncts(e.condition))
            self.expr(e.false_value, loops, conds + [_not(e.condition)])
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


def _count_site(site: Site, space: _Space, drop: set[int], sectors: bool):
    """(elements, warp instructions, sectors) of one site; loops whose position is in `drop` are hoisted out."""
    loops = [(v, e, th) for i, (v, e, th) in enumerate(site.loops) if i not in drop]
    lvars = [v for v, _, _ in loops]

    def pos(v):
        for i, u in enumerate(lvars):
            if u.same_as(v):
                return i
        return None
    conds = []
    for c in site.conds:
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
def _hoisted(site: Site) -> set[int]:
    """Innermost serial loops that do not move an accumulator's address: nvcc keeps it in a register."""
    used = free_vars(site.index)
    drop = set()
    for i in range(len(site.loops) - 1, -1, -1):
        v, _, th = site.loops[i]
        if th or any(u.same_as(v) for u in used):
            break
        drop.add(i)
    return drop


def _unrolled(site: Site) -> set[int]:
    """Innermost constant serial loops nvcc unrolls around the site (product of extents <= UNROLL_LIMIT)."""
    prod, out = 1, set()
    for i in range(len(site.loops) - 1, -1, -1):
        v, ext, th = site.loops[i]
        if th or prod * ext > UNROLL_LIMIT:
            break
        prod *= ext
        out.add(i)
    return out


def _instance(site: Site, space: _Space, unrolled: set[int], merge: bool):
    """(accesses per unrolled body, instructions per unrolled body) after CSE and, for shared, merging;
    None when the body's addresses do not separate from the outer loops' or a predicate involves them."""
    uvars = [site.loops[i][0] for i in sorted(unrolled)]
    if not uvars or site.lanes > 1:
        return None

    def has_u(e):
        return any(any(u.same_as(v) for u in uvars) for v in free_vars(e))
    if any(has_u(c) for c in site.conds):
        return None
    inner, outer = [], []
    for coef, e in _terms(site.index):
        if e is None:
            outer.append((coef, e))
        elif has_u(e):
            if any(not any(u.same_as(v) for u in uvars) for v in free_vars(e)):
                return None             # a term mixes unrolled and outer variables
            inner.append((coef, e))
        else:
            outer.append((coef, e))
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
    align = 1
    for width in (4, 2):
        if all((c % width == 0) for c, e in outer):
            align = width
            break
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


def count(op: str, shape: dict, knobs, target: str, func) -> Counts:
    col = _Collector()
    col.stmt(func.body, [], [])
    space = _Space(Names())
    cuda = target == "cuda"
    per_tensor: dict = {}
    ncu_inst = {"global_ld": 0, "global_st": 0, "shared_ld": 0, "shared_st": 0}
    vector_inst = {"global": 0, "shared": 0, "register": 0}
    scalar_inst = {"global": 0, "shared": 0, "register": 0}
    sectors = 0
    used = set()
    acc_keys = {(s.name, str(s.index), len(s.loops)) for s in col.sites if s.accumulate and s.scope == "global"}
    for site in col.sites:
        level = level_of(site.scope)
        tensor = tensor_of(site.name)
        el, wi, sec = _count_site(site, space, set(), False)
        per_tensor.setdefault(tensor, {lv: {"read": 0, "write": 0} for lv in ("global", "shared", "register")})
        per_tensor[tensor][level][site.kind] += el
        (vector_inst if site.lanes > 1 else scalar_inst)[level] += wi
        if not cuda or level == "register":
            continue
        gl = level == "global"
        key = (site.name, str(site.index), len(site.loops))
        drop = set()
        if gl and key in acc_keys:
            drop = _hoisted(site)
            if drop:
                used.add("accumulator")
        body = None
        if not drop and site.kind == "read":
            unr = _unrolled(site)
            body = _instance(site, space, unr, merge=not gl)
            if body is not None and body[1] < body[0]:
                used.add("cse" if gl or body[1] * 4 > body[0] else "merge")
                drop = unr
            else:
                body = None
        if drop or (gl and site.kind == "read"):
            _, inst_n, sec_n = _count_site(site, space, drop, gl and site.kind == "read")
            if body is not None:           # one unrolled body issues body[1] loads instead of body[0]
                inst_n *= body[1]
                sec_n = sec_n * body[1] if gl else 0
        else:
            inst_n, sec_n = wi, 0
        ncu_inst[f"{'global' if gl else 'shared'}_{'ld' if site.kind == 'read' else 'st'}"] += inst_n
        if gl and site.kind == "read":
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
