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

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ._tirpy import ExprPrinter, Names, _visit, children, free_vars, is_sync, level_of, scope_of, tensor_of, \
    thread_extent
from .ops import OPS
from .records import Counts

WARP = 32
SECTOR = 8                # float32 elements per 32-byte sector
TVM_UNROLLED = -1         # a loop's unroll cost when TVM itself unrolled it (always straight-line for nvcc)
BRANCHY_UNROLL = 64       # nvcc unrolls a loop of more than 4 iterations with a warp-uniform select only this far
UNROLL_LIMIT = 512        # nvcc fully unrolls a constant loop whose unrolled body has up to about this many stores
_DEBUG = False
ENUM_LIMIT = 40_000_000   # points one enumeration may visit (in chunks) before it declines
ENUM_FAST = 2_000_000     # above this many points, count one loop in closed form instead of visiting it

EFFECTS = {
    "accumulator": "nvcc keeps a global accumulator (X[i] = X[i] + ... in a loop that does not move i) in a "
                   "register: the zero it was initialised with is forwarded (no load) and, for a kernel "
                   "argument with no branch in the loop, one store after the loop; otherwise every iteration "
                   "stores, and a loop too long to unroll reloads it every 4 iterations",
    "requests": "a 64- or 128-bit global access is served 128 bytes at a time (by half or quarter warps): a "
                "32-byte sector that two of those requests touch counts twice",
    "sectors": "global load sectors are not predicted at this size: a predicated load whose active lanes and "
               "addresses both move along a long loop, in a way that is not a shift of one block by its index, "
               "would have to be visited lane by lane (null)",
    "first_arm": "`acc += (row_ok ? X : 0) * W` with a row test the whole warp shares becomes a branch with the "
                 "W loads in both arms; for the first unrolled copy nvcc issues the other arm's W loads "
                 "predicated ahead of the branch, so warps whose row is in range issue them twice",
    "lone_copy": "an `if (threadIdx < n)` around one plain copy, alone between two barriers in a loop nvcc "
                 "does not unroll, is predicated, not branched: every warp issues the load and the store",
    "predicated": "a zero-padding guard (if_then_else) becomes a predicated load: the warp issues it even when no "
                  "lane is in bounds, and only in-bounds lanes fetch sectors",
    "cse": "nvcc fully unrolls small constant inner loops and loads each distinct address once per unrolled "
           "body (common-subexpression elimination)",
    "constant_copy": "a shared read under tests that move with the copies TVM unrolled is loaded once for all "
                     "of them only where TVM's simplifier made the copy's address a constant (it cannot fault, "
                     "so nvcc hoists it above the tests); where the address still moves (a tile offset clamped "
                     "at the end of a reduction that the tile does not divide) every copy keeps its own "
                     "predicated load",
    "ldgsts": "a cp.async copy is one LDGSTS instruction per warp (counted under "
              "smsp__inst_executed_op_ldgsts, not as a global load or shared store; its sectors are global load "
              "sectors), and nvcc puts three predicated-off shared loads before each run of them (copies of one "
              "commit group under different branch tests are separate runs)",
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
    accumulate: bool = False        # store whose value reads the same element (X[i] = X[i] + ...)
    into: str = "global"                # scope of the store the access belongs to (a load's destination)
    epoch: int = 0                      # barriers passed before it, in program order
    async_copy: bool = False            # part of a cp.async copy (global -> shared in one LDGSTS)
    commit: int = -1                    # the async_commit_queue_scope (index into commits) it belongs to
    stmt: int = -1                      # the store statement it is part of
    copy: bool = False                  # a read whose store copies it (through a padding select at most)


def _conjuncts(c) -> list:
    if type(c).__name__ == "And":
        return _conjuncts(c.a) + _conjuncts(c.b)
    if type(c).__name__ == "Call" and c.op.name.endswith("likely"):
        return _conjuncts(c.args[0])
    return [c]


def _not(c):
    from tvm import tirx
    return tirx.Not(c)


def _tvm_unrolled(root) -> set[int]:
    """Handles of the loops TVM's UnrollLoop unrolls (the `unroll` knob's pragma_auto_unroll_max_step), found on
    the folded form with the pass's own rule: a serial loop whose nested loops are all unrolled, at most 8
    unrolled levels deep, with extent x statements of its body <= the pragma's step count (a loop already
    marked unrolled always is). nvcc sees these as straight-line code."""
    out: set[int] = set()

    def visit(s, max_step):
        t = type(s).__name__
        if t == "BufferStore" or (t == "Evaluate" and not is_sync(s)):
            return 1, 0, 0
        if t == "AttrStmt" and s.attr_key == "pragma_auto_unroll_max_step":
            return visit(s.body, int(s.value))
        if t == "For":
            steps, normal, depth = visit(s.body, max_step)
            ext = int(s.extent) if type(s.extent).__name__ == "IntImm" else -1
            kind = int(s.kind)                  # 0 serial, 3 unrolled
            auto = (kind == 0 and ext >= 0 and normal == 0 and depth <= 8 and ext * steps <= max_step) or \
                (kind == 3 and ext >= 0)
            if auto:
                out.add(s.__chandle__())
                return steps * ext, normal, depth + 1
            return steps, normal + 1, depth
        kids = children(s)
        if t == "SeqStmt":
            res = [visit(c, max_step) for c in kids]
            return sum(r[0] for r in res), max((r[1] for r in res), default=0), max((r[2] for r in res), default=0)
        steps = normal = depth = 0
        for c in kids:
            a, b, d = visit(c, max_step)
            steps, normal, depth = steps + a, max(normal, b), max(depth, d)
        return steps, normal, depth
    visit(root, 0)
    return out


class _Collector:
    def __init__(self, tvm_unrolled: set[int] | None = None):
        self.tvm_unrolled = tvm_unrolled or set()
        self.sites: list[Site] = []
        self.blocks: list[int] = []
        self.threads = 1
        self.sole: list[bool] = []          # per enclosing serial loop: its body is one statement
        self.if_sole: dict = {}             # if id -> the sole flags of the serial loops around it
        self.if_tail: dict = {}             # if id -> nothing follows it in its kernel
        self.if_copy: set = set()           # ifs alone between two barriers whose body is one plain copy
        self.tail = True
        self.commit = -1
        self.stmt_no = -1                   # store statements seen so far
        self.store_scope = "global"
        self.epoch = 0                      # barriers seen so far in program order
        self.async_copy = False             # inside an async_scope (the copy becomes cp.async)
        self.commits: list[Site] = []       # each async_commit_queue_scope, as a placeholder site
        self.thread_vars: list = []
        self.copy = False                   # inside the value of a store that only copies a load

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
                self.thread_vars.append(var)
            self.stmt(s.body, loops + [(var, ext, True, 0)], conds)
            return
        if t == "For":
            ext = int(s.extent) if type(s.extent).__name__ == "IntImm" else None
            if ext is None:
                raise NotImplementedError("a loop with a non-constant extent in the lowered TensorIR")
            self.sole.append(type(s.body).__name__ != "SeqStmt")
            if s.__chandle__() in self.tvm_unrolled:
                cost = TVM_UNROLLED     # TVM unrolled it: nvcc sees straight-line code
            else:
                cost = ext * _stores(s.body)
                kind = _branches(s.body, self.thread_vars, [l[0] for l in loops if not l[2]] + [s.loop_var])
                if ext > 4 and (kind == "if" or kind == "select" and cost > BRANCHY_UNROLL):
                    cost = 1 << 20      # kept rolled
            self.stmt(s.body, loops + [(s.loop_var, ext, False, cost)], conds)
            self.sole.pop()
        elif t == "IfThenElse":
            d, k = len(loops), s.__chandle__()      # id() of a TVM wrapper is reused once it is freed
            self.if_sole[k] = list(self.sole)
            self.if_tail[k] = self.tail
            self.stmt(s.then_case, loops, conds + [(c, "if", d, k) for c in _conjuncts(s.condition)])
            if s.else_case is not None:
                self.stmt(s.else_case, loops, conds + [(_not(s.condition), "if", d, k + 1)])
        elif t == "BufferStore":
            self.store_scope = scope_of(s.buffer)
            self.stmt_no += 1
            v = s.value
            if type(v).__name__ == "Call" and v.op.name.endswith("if_then_else"):
                v = v.args[1]
            self.copy = type(v).__name__ in ("TensorLoad", "BufferLoad")
            self.expr(s.value, loops, conds)
            self.copy = False
            self.expr(s.indices[0], loops, conds)
            acc = _reads_same(s.value, s.buffer, s.indices[0])
            self.sites.append(Site(s.buffer, s.buffer.name, scope_of(s.buffer), "write", s.indices[0],
                                   _lanes(s.indices[0], s.buffer), loops, conds, self.threads, accumulate=acc,
                                   epoch=self.epoch, async_copy=self.async_copy))
        elif t == "AttrStmt" and s.attr_key == "async_scope":
            was, self.async_copy = self.async_copy, True
            self.stmt(s.body, loops, conds)
            self.async_copy = was
        elif t == "AttrStmt" and s.attr_key == "async_commit_queue_scope":
            from tvm import tirx
            self.commits.append(Site(None, "", "shared", "read", tirx.const(0, "int32"), 1, loops, conds,
                                     self.threads))
            was, self.commit = self.commit, len(self.commits) - 1
            self.stmt(s.body, loops, conds)
            self.commit = was
        elif t == "LetStmt":
            self.expr(s.value, loops, conds)
            self.stmt(s.body, loops, conds)
        elif t == "Evaluate":
            if is_sync(s):
                self.epoch += 1
            else:
                self.expr(s.value, loops, conds)
        elif t == "SeqStmt":
            tail = self.tail
            seq = list(s.seq)
            for prev, x, nxt in zip(seq, seq[1:], seq[2:]):
                if type(x).__name__ == "IfThenElse" and x.else_case is None and \
                        type(x.then_case).__name__ == "BufferStore" and \
                        type(x.then_case.value).__name__ in ("BufferLoad", "TensorLoad") and \
                        all(type(b).__name__ == "Evaluate" and is_sync(b) for b in (prev, nxt)):
                    self.if_copy.add(x.__chandle__())
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
                                   _lanes(e.indices[0], e.source), loops, conds, self.threads, into=self.store_scope,
                                   epoch=self.epoch, async_copy=self.async_copy,
                                   commit=self.commit if self.async_copy else -1, stmt=self.stmt_no,
                                   copy=self.copy))
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


def _stores(s) -> int:
    """BufferStores one execution of s performs (conditions ignored): how big nvcc's unrolled body gets."""
    t = type(s).__name__
    if t == "BufferStore":
        return 1
    if t == "For":
        return int(s.extent) * _stores(s.body) if type(s.extent).__name__ == "IntImm" else 1 << 20
    return sum(_stores(c) for c in children(s))


def _branches(s, thread_vars, serial_vars=()) -> str | None:
    """The branch nvcc keeps in s: "if" for a statement `if` on a run-time test, "select" for a zero-padding
    select with a conjunct the whole warp shares (no threadIdx: nvcc branches on it), None for neither. An
    `if` on serial loop counters alone (a reduction's `if (ry == 0 && rx == 0) acc = 0`) is decided at
    compile time once the loops are unrolled: not a branch."""
    found = set()
    counters = list(serial_vars)

    def on_counters(c) -> bool:
        vs, loads = free_vars(c), []
        _visit(c, lambda n: loads.append(n) if type(n).__name__ in ("BufferLoad", "TensorLoad") else None)
        return bool(vs) and not loads and all(any(v.same_as(u) for u in counters) for v in vs)

    def expr(e):
        def v(n):
            if type(n).__name__ == "Call" and n.op.name.endswith("if_then_else"):
                if any(free_vars(c) and not any(_uses(c, t) for t in thread_vars) for c in _conjuncts(n.args[0])):
                    found.add("select")
        _visit(e, v)

    def stmt(x):
        t = type(x).__name__
        if t == "For":
            counters.append(x.loop_var)
        if t == "IfThenElse" and not on_counters(x.condition):
            found.add("if")
        elif t == "BufferStore":
            expr(x.value)
        for c in children(x):
            stmt(c)
    stmt(s)
    return "if" if "if" in found else "select" if found else None


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
    unknown = False
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
        if res is None:               # exact sectors too costly here: count without them
            sectors, unknown = False, True
            res = _enumerate(loops, members, mconds, mterms, tx if has_tx else None, site, space, False)
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
    secs = None if unknown else 0
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


def _split_on(fv, mconds, mterms):
    """(each test as linear in fv, fv's coefficient in the address, the address terms without fv), or None
    where a test is not linear in fv or fv enters the address other than as a plain term."""
    lin = [_linear(c, fv) for c in mconds]
    if any(x is None for x in lin):
        return None
    is_f = [e is not None and type(e).__name__ == "Var" and e.same_as(fv) for _, e in mterms]
    if any(e is not None and _uses(e, fv) and not x for (_, e), x in zip(mterms, is_f)):
        return None
    return lin, sum(c for (c, _), x in zip(mterms, is_f) if x), [t for t, x in zip(mterms, is_f) if not x]


def _enumerate_free(loops, members, mconds, mterms, tx, site, space, sectors, f):
    """As _enumerate, without visiting the loop f: every conjunct is linear in f, so each point of the other
    loops admits one interval of f, counted in closed form. Warp instructions take the union of the lanes'
    intervals; the sector histogram counts the f of each residue class. Returns None where that does not
    apply (a non-linear test, or a warp whose lanes' addresses and activity both move with f)."""
    fv = loops[f][0]
    split = _split_on(fv, mconds, mterms)
    if split is None:
        return None
    lin, af, rest_terms = split
    single = tx is None or site.threads == 1
    if sectors and not single:
        return None
    order = [i for i in members if i not in (tx, f)] + ([tx] if tx is not None else [])
    exts = [loops[i][1] for i in order]
    if tx is not None:
        exts = exts[:-1] + [-(-loops[tx][1] // WARP) * WARP]
    if math.prod(exts) > ENUM_LIMIT:
        return None
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
    out = {"points": int(cnt.sum()), "warp_points": 0, "hist": np.zeros(SECTOR, dtype=object),
           "sectors": np.zeros(SECTOR, dtype=object)}
    if tx is not None:
        big = np.iinfo(np.int64).max // 4
        L = np.where(cnt > 0, lo, big).reshape(-1, WARP)
        H = np.where(cnt > 0, hi, big - 1).reshape(-1, WARP)
        idx = np.argsort(L, axis=1)
        L, H = np.take_along_axis(L, idx, 1), np.take_along_axis(H, idx, 1)
        prev = np.concatenate([np.full((L.shape[0], 1), -1, dtype=np.int64),
                               np.maximum.accumulate(H, axis=1)[:, :-1]], axis=1)
        out["warp_points"] = int(np.maximum(H - np.maximum(L, prev + 1) + 1, 0).sum())
    if sectors:
        base = _value(rest_terms, space, env, exts)
        period = SECTOR // math.gcd(af, SECTOR) if af else 1
        for t in range(period):                          # the f with f = t (mod period) share a residue
            n_t = np.where(cnt > 0, (hi - t) // period - (lo - 1 - t) // period, 0)
            w = np.bincount(((base + af * t) % SECTOR).ravel(), weights=n_t.ravel().astype(float),
                            minlength=SECTOR)
            out["hist"] += np.array([int(round(x)) for x in w], dtype=object)
        if tx is not None:                               # one lane per warp: a load spans its own sectors
            h = out["hist"]
            out["sectors"] = np.array([sum(int(h[r]) * _sectors_single((r + q) % SECTOR, site.lanes)
                                           for r in range(SECTOR)) for q in range(SECTOR)], dtype=object)
    return out


def _warp_sectors(addr, mask, site, warps):
    """Warp instructions and per-residue distinct sectors of a grid whose last axis is the thread index."""
    m = mask.reshape(-1, warps, WARP)
    secs = np.zeros(SECTOR, dtype=object)
    a = addr.reshape(-1, warps, WARP)[..., None] + site_stride(site) * np.arange(site.lanes)
    a, mm = _requests(a, np.repeat(m.reshape(-1, WARP), site.lanes, axis=1), site.lanes)
    keep = mm.any(axis=1)
    for r, distinct in enumerate(_distinct_sectors(a[keep], mm[keep])):
        secs[r] += int(distinct.sum())
    return int(m.any(axis=-1).sum()), secs


def _enumerate_classes(loops, members, mconds, mterms, tx, site, space, f):
    """Exact warp sectors without visiting every iteration of the long loop f (a block index), where every
    test is linear in f and the addresses move with f as a * f: for the f whose tests hold at every point of
    the other loops (the interior blocks), the warps' sectors are those of one block shifted by a * f, so
    they depend on a * f mod 8 alone and are counted once per residue; the few f where a test holds at some
    points only (the edge blocks) are visited; the f where a test never holds issue nothing. None where
    that does not apply."""
    fv = loops[f][0]
    split = None if tx is None else _split_on(fv, mconds, mterms)
    if split is None:
        return None
    lin, af, rest_terms = split
    order = [i for i in members if i not in (tx, f)] + [tx]
    warps = -(-loops[tx][1] // WARP)
    exts = [loops[i][1] for i in order[:-1]] + [warps * WARP]
    ext = loops[f][1]
    if math.prod(exts) > ENUM_FAST:
        return None
    grids = np.indices(exts, dtype=np.int64)
    env = {space.names(loops[i][0], loops[i][0].name): grids[k] for k, i in enumerate(order)}
    base_mask = env[space.names(loops[tx][0], loops[tx][0].name)] < loops[tx][1]
    fs = np.arange(ext, dtype=np.int64)
    always = np.ones(ext, dtype=bool)
    never = np.zeros(ext, dtype=bool)
    moving = []
    for (kind, bound, cf, rest), c in zip(lin, mconds):
        if cf == 0:
            base_mask &= np.broadcast_to(np.asarray(space.eval(c, env), dtype=bool), exts)
    empty = {"points": 0, "warp_points": 0, "hist": np.zeros(SECTOR, dtype=object),
             "sectors": np.zeros(SECTOR, dtype=object)}
    if not base_mask.any():
        return empty
    for (kind, bound, cf, rest), c in zip(lin, mconds):
        if cf == 0:
            continue
        lim = bound - _value(rest, space, env, exts)     # cf * f <= lim ('le') or >= lim ('ge')
        lo, hi = int(lim[base_mask].min()), int(lim[base_mask].max())
        if kind == "le":
            always &= cf * fs <= lo
            never |= cf * fs > hi
        else:
            always &= cf * fs >= hi
            never |= cf * fs < lo
        moving.append(c)
    inner = always & ~never
    edge = np.nonzero(~always & ~never)[0]
    if len(edge) * math.prod(exts) > ENUM_LIMIT:
        return None
    base = _value(rest_terms, space, env, exts)
    wp, s = _warp_sectors(base, base_mask, site, warps)
    per_res = np.bincount((af * fs[inner]) % SECTOR, minlength=SECTOR)
    n_in = int(inner.sum())
    out = {"points": n_in * int(base_mask.sum()), "warp_points": n_in * wp, "hist": np.zeros(SECTOR, dtype=object),
           "sectors": np.array([sum(int(per_res[q]) * s[(r + q) % SECTOR] for q in range(SECTOR))
                                for r in range(SECTOR)], dtype=object)}
    name = space.names(fv, fv.name)
    for fe in edge:                       # the edge blocks, one at a time
        env[name] = np.int64(fe)
        mask = base_mask.copy()
        for c in moving:
            mask &= np.broadcast_to(np.asarray(space.eval(c, env), dtype=bool), exts)
        wp, s = _warp_sectors(base + af * int(fe), mask, site, warps)
        out["points"] += int(mask.sum())
        out["warp_points"] += wp
        out["sectors"] += s
    return out


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


def _compress(loops, i, mconds, mterms, space):
    """A long loop that the tests and addresses see only through a few values (a fused block index seen as
    its row and column, b // 128 % 128 and b % 128): the distinct value tuples and how many iterations give
    each, found in one vectorised pass over the loop. None when that does not shrink the loop."""
    v, ext = loops[i][0], loops[i][1]
    parts: list = []
    for c in mconds:
        if not _single_var_parts(c, v, parts):
            return None
    res_terms = []
    for c, e in mterms:
        if e is not None and _uses(e, v):
            if len(free_vars(e)) != 1:
                return None
            res_terms.append((c, e))
    if not parts:
        return None               # only addresses see it: plain enumeration handles a lone loop fast
    uniq = {str(p): p for p in parts}
    name = space.names(v, v.name)
    memo = (name, ext, tuple(uniq), tuple((c, str(e)) for c, e in res_terms))
    if memo in space.compressed:          # sites of one kernel often see a block index the same way
        return space.compressed[memo]
    space.compressed[memo] = result = _compress_pass(v, ext, i, uniq, res_terms, space, name)
    return result


def _compress_pass(v, ext, i, uniq, res_terms, space, name):

    def columns(start):
        env = {name: np.arange(start, min(ext, start + (1 << 22)), dtype=np.int64)}
        n = env[name].shape
        vals = [np.broadcast_to(np.asarray(space.eval(p, env), dtype=np.int64), n) for p in uniq.values()]
        r = sum((c * np.broadcast_to(np.asarray(space.eval(e, env), dtype=np.int64), n) for c, e in res_terms),
                np.zeros(n, dtype=np.int64)) % SECTOR
        return vals + [r]
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


def _enumerate_compressed(loops, members, mconds, mterms, tx, site, space, sectors, comp):
    """_enumerate with loop comp['i'] replaced by its distinct value tuples, each weighted by its count."""
    ci = comp["i"]
    order = [i for i in members if i not in (tx, ci)] + ([tx] if tx is not None else [])
    exts = [len(comp["keys"])] + [loops[i][1] for i in order]
    if tx is not None:
        warps = -(-loops[tx][1] // WARP)
        exts = exts[:-1] + [warps * WARP]
    if math.prod(exts) > ENUM_LIMIT:
        return None
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
    out = {"points": int((mask * weight).sum()), "warp_points": 0, "hist": np.zeros(SECTOR, dtype=object),
           "sectors": np.zeros(SECTOR, dtype=object)}
    addr = None
    if sectors:
        addr = comp["keys"][:, -1][grids[0]].copy()
        for c, e in mterms:
            if e is not None and _uses(e, loops[ci][0]):
                continue
            addr = addr + (c if e is None else c * np.broadcast_to(
                np.asarray(space.eval(e, env), dtype=np.int64), exts))
    if tx is None:
        if sectors:
            out["hist"] += np.bincount((addr % SECTOR).ravel(), weights=(mask * weight).ravel().astype(float),
                                       minlength=SECTOR).round().astype(np.int64).astype(object)
        return out
    m = mask.reshape(-1, warps, WARP)
    wrow = weight.reshape(-1, warps, WARP)[..., 0]
    out["warp_points"] = int((m.any(axis=-1) * wrow).sum())
    if sectors:
        a = addr.reshape(-1, warps, WARP)[..., None] + site_stride(site) * np.arange(site.lanes)
        a, mm = _requests(a, np.repeat(m.reshape(-1, WARP), site.lanes, axis=1), site.lanes)
        wr = np.repeat(wrow.reshape(-1), site.lanes)
        keep = mm.any(axis=1)
        a, mm, wr = a[keep], mm[keep], wr[keep]
        for r, distinct in enumerate(_distinct_sectors(a, mm)):
            out["sectors"][r] += int((distinct * wr).sum())
    return out


def _lone_loop(loop, mterms, space, sectors):
    """A long loop seen only by addresses: its residue histogram is one period's, times the periods."""
    v, ext = loop[0], loop[1]
    if not sectors:
        return {"points": ext, "warp_points": 0, "hist": np.zeros(SECTOR, dtype=object),
                "sectors": np.zeros(SECTOR, dtype=object)}
    p = 1
    for c, e in mterms:
        q = _period(e, v) if e is not None else 1
        if q is None:
            return None
        p = math.lcm(p, q)
    if p > ENUM_FAST:
        return None
    name = space.names(v, v.name)

    def hist(n0, n1):
        env = {name: np.arange(n0, n1, dtype=np.int64)}
        a = _value(mterms, space, env, env[name].shape)
        return np.bincount(a % SECTOR, minlength=SECTOR)
    full, rem = divmod(ext, p)
    h = hist(0, p).astype(object) * full + (hist(full * p, ext).astype(object) if rem else 0)
    return {"points": ext, "warp_points": 0, "hist": np.array(h, dtype=object),
            "sectors": np.zeros(SECTOR, dtype=object)}


def _period(e, v) -> int | None:
    """A period of e(v) mod 8 in v, for e built from v by *, //, % with constants; None otherwise."""
    t = type(e).__name__
    if t == "Var" and e.same_as(v):
        return SECTOR
    if t == "IntImm":
        return 1
    if t in ("Add", "Sub"):
        a, b = _period(e.a, v), _period(e.b, v)
        return None if a is None or b is None else math.lcm(a, b)
    if t == "Mul" and type(e.b).__name__ == "IntImm":
        p = _period(e.a, v)
        return None if p is None else max(1, p // math.gcd(int(e.b.value), p)) if p == SECTOR else p
    if t in ("FloorDiv", "FloorMod") and type(e.b).__name__ == "IntImm":
        inner = _full_period(e.a, v)
        if inner is None:
            return None
        d = int(e.b.value)
        return inner * d * SECTOR if t == "FloorDiv" else math.lcm(inner, d)
    return None


def _full_period(e, v) -> int | None:
    """A period of e(v) itself (not mod 8): only v plus constants qualifies (its period is 'none': 1)."""
    t = type(e).__name__
    if t == "Var" and e.same_as(v):
        return 1
    if t in ("Add", "Sub") and type(e.b).__name__ == "IntImm":
        return _full_period(e.a, v)
    if t == "FloorDiv" and type(e.b).__name__ == "IntImm":
        return _full_period(e.a, v)
    return None


def _requests(a, active, lanes: int):
    """A warp's addresses (one row of WARP * lanes floats) as the requests the memory unit counts sectors in:
    a 64- or 128-bit access is served 128 bytes at a time, by half or quarter warps, and a sector that two of
    them touch is counted twice (read off an H200: 5,800 sectors where the warp's distinct sectors are
    5,600)."""
    return a.reshape(-1, WARP), active.reshape(-1, WARP)


def _distinct_sectors(a, active):
    """For each residue r of a common offset (0..7 floats): the number of distinct 32-byte sectors that the
    active lanes' addresses a + r touch, per row (warp instruction). Sorting once serves every r: adding r
    and dividing by 8 keep the order."""
    top = np.iinfo(np.int64).max // 2
    s = np.where(active, a, top)
    s.sort(axis=1)
    valid = s != top
    for r in range(SECTOR):
        q = (s + r) // SECTOR
        yield ((np.diff(q, axis=1) != 0) & valid[:, 1:]).sum(axis=1) + valid[:, 0]


def _enumerate(loops, members, mconds, mterms, tx, site, space, sectors):
    """Points of one component satisfying its conjuncts; with the thread loop, also warp instructions and
    per-residue sector counts."""
    if len(members) == 1 and tx is None and not mconds and loops[members[0]][1] > ENUM_FAST:
        res = _lone_loop(loops[members[0]], mterms, space, sectors)
        if res is not None:
            return res
    big = [i for i in members if i != tx and loops[i][1] >= 64]
    total = math.prod(loops[i][1] for i in members)
    if total > ENUM_FAST and big:
        for f in sorted(big, key=lambda i: -loops[i][1]):
            res = _enumerate_free(loops, members, mconds, mterms, tx, site, space, sectors, f)
            if res is not None:
                return res
    comp = None
    if total > ENUM_FAST:
        for i in sorted(big, key=lambda i: -loops[i][1]):
            comp = _compress(loops, i, mconds, mterms, space)
            if comp is not None:
                break
    if comp is not None:
        return _enumerate_compressed(loops, members, mconds, mterms, tx, site, space, sectors, comp)
    if sectors and tx is not None and total > ENUM_FAST and site.threads > 1:
        for f in sorted(big, key=lambda i: -loops[i][1]):
            res = _enumerate_classes(loops, members, mconds, mterms, tx, site, space, f)
            if res is not None:
                return res
    if sectors and tx is not None and total > ENUM_LIMIT and site.threads > 1:
        return None               # exact sectors would visit every lane: left out at this size
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
            a, mm = _requests(a, np.repeat(m.reshape(-1, WARP), site.lanes, axis=1), site.lanes)
            keep = mm.any(axis=1)
            a, mm = a[keep], mm[keep]
            for r, distinct in enumerate(_distinct_sectors(a, mm)):
                secs[r] += int(distinct.sum())
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
    """Innermost serial loops nvcc unrolls fully: each one's body, unrolled, stays under UNROLL_LIMIT stores
    (a loop of more than 4 iterations whose body branches is kept rolled: see _Collector)."""
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


def _issue_conds(site: Site, unrolled: set[int], if_sole: dict, if_tail: dict,
                 if_copy: set = frozenset(), effects: set | None = None) -> tuple[list, set[int]]:
    """The conditions that decide whether a warp issues the access, and the unrolled loops across which its
    copies share one basic block (where nvcc can share or merge loads).

    Statement `if`s: a test on unrolled loops only is decided at compile time. In a loop nvcc does not
    unroll, a test that does not change with the loop becomes a branch (a warp with no active lane skips the
    access), one that changes is predicated (the warp issues it anyway). In unrolled code, adjacent copies of
    an `if` with the same test merge into one block: a block of 8 or more accesses becomes a branch, a smaller
    one is predicated. A zero-padding select under an `if` that fills registers becomes one branch on both
    tests (in code TVM unrolled too, where the statement only copies the load: a register window fill). A
    zero-padding select elsewhere is predicated, except for a test the whole warp shares (no threadIdx) that
    stays fixed across the innermost unrolled loop: nvcc branches on that part. A padding select whose address
    needs division by a non-power-of-two is branched too (too costly to predicate)."""
    uvars = [site.loops[i][0] for i in unrolled]
    tx = [l[0] for l in site.loops if l[2] and not _is_block(l[0])]
    inner_u = site.loops[max(unrolled)][0] if unrolled else None
    groups: dict = {}
    for c, kind, depth, key in site.conds:
        groups.setdefault((kind, key), (depth, []))[1].append(c)
    nested_ite = any(k == "ite" for k, _ in groups)
    keep, combined = [], False
    region = set(unrolled)
    tail = None
    for (kind, key), (depth, cs) in sorted(groups.items(), key=lambda g: g[0][0] != "if"):
        # a conjunct on unrolled loops only is decided at compile time, whatever the rest of its test is
        static = [c for c in cs if free_vars(c) and all(any(u.same_as(v) for u in uvars) for v in free_vars(c))]
        keep += static
        cs = [c for c in cs if not any(c.same_as(x) for x in static)]
        if not cs:
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
        straight = bool(serial) and site.loops[serial[-1]][3] == TVM_UNROLLED
        if nested_ite and ((site.into == "local" and (site.copy or not straight)) or
                           (not straight and _costly(site.index))):
            keep += cs                  # guarded select into registers, or with costly addressing: a branch
            #                             (nvcc: `@P BRA` past each LDG of an unrolled window fill, on each test)
            combined = True
        elif serial and serial[-1] not in unrolled:
            # a test that does not move with the loop is a branch, unless it guards one plain copy, alone
            # between two barriers, by the thread index and the loop counters alone (`if (tx < n) S[tx] =
            # G[..]`, or a tile clamped at the reduction's end, `if (tx < 64 && tx - 64 * k >= -936)`): nvcc
            # predicates the load and the store (every warp issues them)
            counters = tx + [site.loops[i][0] for i in serial]
            lone_copy = key in if_copy and all(any(_uses(c, t) for t in tx) and
                                               all(any(v.same_as(t) for t in counters) for v in free_vars(c))
                                               for c in cs)
            # nvcc splits the test: its conjuncts that do not move with the loop are a branch, the rest a
            # predicate (an async copy `if (row < M && k < K)` in the k loop: warps wholly past M skip it)
            fixed = [c for c in cs if not _uses(c, site.loops[serial[-1]][0])]
            if lone_copy:
                if effects is not None:
                    effects.add("lone_copy")
            else:
                keep += fixed
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
            runs = None if invariant or not if_tail.get(key) else _tail_runs(site, cs, serial, unrolled, sole)
            if runs:
                tail = (site.loops[serial[-1]][0], cs, runs)
            elif block >= 8 or (if_tail.get(key) and invariant):
                keep += cs              # a branch, or `if (!test) return` at the kernel's end
            if not all(_speculated(site, c, unrolled) for c in cs):
                region = {i for i in region if i >= depth or i in merged}
    for c, kind, depth, _ in site.conds:
        used = [i for i in unrolled if _uses(c, site.loops[i][0])]
        if used and _speculated(site, c, unrolled):
            continue
        if used:
            region = {i for i in region if i > max(used)}
    if tail is None:
        return [keep], region
    f, cs, runs = tail                  # the last run is `if (!test) return`, the others predicated
    return [keep + [f >= lo, f < hi] + (cs if j == len(runs) - 1 else []) for j, (lo, hi) in enumerate(runs)], region


def _first_arm_hoisted(site: Site, issue: list, col: _Collector, space: _Space) -> int:
    """Extra warp loads of a global read that sits beside a branched zero-padding select in one statement
    (`acc += (row_ok ? X[..] : 0) * W[..]`, with row_ok the same for the whole warp and fixed across the
    innermost unrolled loop): nvcc makes the select a branch with W loaded in both arms, and for the first
    unrolled copy of the branch it issues the other arm's loads predicated before the branch, so the warps
    that take the branch issue them twice. Read from the SASS of a loop nvcc does not unroll, whose body is
    these copies with no other `if` around them; 0 where that is not the case."""
    if site.conds:
        return 0
    serial = [i for i, l in enumerate(site.loops) if not l[2]]
    unrolled = _unrolled(site)
    if not serial or serial[0] in unrolled or not unrolled:
        return 0
    for x in col.sites:
        if x is site or x.stmt != site.stmt or x.kind != "read" or level_of(x.scope) != "global" or \
                any(c[1] == "if" for c in x.conds) or not any(c[1] == "ite" for c in x.conds):
            continue
        x_unr = _unrolled(x)
        x_issue, _ = _issue_conds(x, x_unr, col.if_sole, col.if_tail, col.if_copy)
        tx = [l[0] for l in x.loops if l[2] and not _is_block(l[0])]
        branch = [c for c in (x_issue[0] if len(x_issue) == 1 else []) if not any(_uses(c, t) for t in tx)
                  and any(c.same_as(d[0]) for d in x.conds if d[1] == "ite")]
        first = [x.loops[i][0] for i in sorted(x_unr) if any(_uses(c, x.loops[i][0]) for c in branch)]
        if not branch or not first:
            continue
        return _count_site(site, space, set(), False, issue + branch + [first[0] < 1])[1]
    return 0


def _tail_runs(site: Site, cs: list, serial: list[int], unrolled: set[int], sole: list) -> list | None:
    """The unrolled copies of an `if` at a kernel's end, in runs with identical tests: row + a < bound (a the
    copy) is one test per run of copies (TVM or nvcc simplifies it so), nvcc predicates the stores of every run
    but the last and turns the last run's test into an early exit (warps with no lane in range skip it).
    [(first copy, end)] for two runs or more, else None."""
    i0 = serial[-1]
    f, ext = site.loops[i0][0], site.loops[i0][1]
    if i0 not in unrolled or not sole or not sole[-1]:
        return None
    if any(_uses(c, site.loops[i][0]) for i in serial[:-1] for c in cs):
        return None
    moving = [c for c in cs if _uses(c, f)]
    lin = _linear(moving[0], f) if len(moving) == 1 else None
    if lin is None:
        return None
    kind, bound, cf, rest = lin
    const = sum(c for c, e in rest if e is None)
    g = math.gcd(*[abs(c) for c, e in rest if e is not None]) or 1
    # cf*a + g*Y + const <= bound  <=>  Y <= floor((bound - const - cf*a) / g)   (>=: ceil)
    keys = [(bound - const - cf * a) // g if kind == "le" else -((-(bound - const - cf * a)) // g)
            for a in range(ext)]
    runs, lo = [], 0
    for a in range(1, ext + 1):
        if a == ext or keys[a] != keys[lo]:
            runs.append((lo, a))
            lo = a
    return runs if len(runs) > 1 else None


def _speculated(site: Site, cond, unrolled: set[int]) -> bool:
    """A shared-memory read that the copies of code TVM unrolled, guarded by different tests, make at one
    address (the tests move with loops its address does not): it cannot fault, so nvcc loads it once."""
    if site.scope not in ("shared", "shared.dyn") or site.kind != "read":
        return False
    moved = [i for i in unrolled if _uses(cond, site.loops[i][0])]
    return bool(moved) and all(site.loops[i][3] == TVM_UNROLLED for i in moved) and \
        not any(_uses(site.index, site.loops[i][0]) for i in moved)


def _merged(addrs: set[int], align: int) -> int:
    """Loads left when adjacent aligned addresses of one body merge into 128- and 64-bit loads."""
    left, n = set(addrs), 0
    for width in (4, 2):
        if width > align:
            continue
        for a in sorted(left):
            if a % width == 0 and all(a + j in left for j in range(width)):
                left.difference_update(a + j for j in range(width))
                n += 1
    return n + len(left)


PER_COPY_LIMIT = 4096     # unrolled copies simplified one by one at most


def _per_copy(site: Site, unrolled: set[int]):
    """A shared read under tests that move with the loops TVM unrolls *and* with its address: TVM simplifies
    each copy on its own, with the loop counters' ranges and the copy's tests as context (a remainder test
    on the reduction is provably true for most copies and drops out; under the rest it pins the loop
    counter, which can turn a clamped tile offset, min/max of the counter, into a constant). nvcc loads a
    copy whose address is a constant once for every copy that reads it, ahead of their tests (a constant
    address into shared memory cannot fault), and merges those; a copy whose address still moves keeps its
    own predicated load. (accesses per unrolled body, loads per unrolled body) or None."""
    if site.scope not in ("shared", "shared.dyn") or site.kind != "read" or not unrolled or site.lanes > 1:
        return None
    if any(th and _uses(site.index, v) for v, _, th, _ in site.loops):
        return None                     # an address that moves with the thread is never a constant
    from tvm import ir, tirx
    from tvm.sym import Analyzer
    uvars = [site.loops[i][0] for i in sorted(unrolled)]
    exts = [site.loops[i][1] for i in sorted(unrolled)]
    if math.prod(exts) > PER_COPY_LIMIT:
        return None
    an = Analyzer()
    for i, (v, ext, _, _) in enumerate(site.loops):
        if i not in unrolled:
            an.bind(v, ir.Range(0, ext))
    const, moving = set(), 0
    for point in itertools.product(*map(range, exts)):
        for v, x in zip(uvars, point):
            an.bind(v, tirx.IntImm("int32", x), allow_override=True)
        tests = [an.simplify(c[0]) for c in site.conds]
        if any(type(t).__name__ == "IntImm" and not t.value for t in tests):
            continue                    # TVM drops a copy whose test is provably false
        live = [t for t in tests if type(t).__name__ != "IntImm"]
        if live:
            with an.constraint_scope(functools.reduce(tirx.And, live)):
                idx = an.simplify(site.index)
        else:
            idx = an.simplify(site.index)
        if type(idx).__name__ == "IntImm" and idx.value >= 0:
            const.add(int(idx.value))
        else:
            moving += 1
    return math.prod(exts), _merged(const, 4) + moving


def _instance(site: Site, space: _Space, unrolled: set[int], merge: bool):
    """(accesses per unrolled body, instructions per unrolled body) after CSE and, for shared, merging;
    None when the body's addresses do not separate from the outer loops'."""
    uvars = [site.loops[i][0] for i in sorted(unrolled)]
    if not uvars or site.lanes > 1:
        return None

    def has_u(e):
        return any(any(u.same_as(v) for u in uvars) for v in free_vars(e))
    if any(has_u(c[0]) and not _speculated(site, c[0], unrolled) for c in site.conds):
        return None                     # each unrolled copy has its own predicate: no sharing
    inner, outer = [], []
    for coef, e in _terms(site.index):
        if e is None:
            inner.append((coef, e))     # a constant offset: part of each copy's address (alignment included)
        elif not has_u(e):
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
        if e is None:
            vals = vals + coef
            continue
        vals = vals + coef * np.broadcast_to(np.asarray(space.eval(e, env), dtype=np.int64), exts)
    distinct = np.unique(vals)
    total = int(np.prod(exts))
    if not merge:
        return total, len(distinct)
    align = next((w for w in (4, 2) if all(c % w == 0 for c, e in outer)), 1)
    return total, _merged(set(distinct.tolist()), align)


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
        hvars = [acc.loops[i][0] for i in hoist]
        # an `if` inside a short loop whose test does not move with it: nvcc unrolls the loop and the copies of
        # the `if` merge into one (the test is hoisted); in a long loop every iteration branches
        short = math.prod(acc.loops[i][1] for i in hoist) <= UNROLL_LIMIT
        branch = any(k == "if" and d > first and (not short or any(_uses(c, v) for v in hvars))
                     for c, k, d, _ in acc.conds)
        guarded = any(c[1] == "ite" for s in sites if s.kind == "read" and len(s.loops) == len(acc.loops)
                      and all(a[0].same_as(b[0]) for a, b in zip(s.loops, acc.loops)) for c in s.conds)
        if tensor_of(acc.name) in params and not branch:
            out[id(acc)] = ("promoted", hoist)
            if load is not None:        # a barrier between the zero store and the loop: loaded once after it
                fwd = init is not None and init.epoch == load.epoch
                out[id(load)] = ("forwarded", None) if fwd else ("promoted", hoist)
            if init is not None and all_unrolled and not guarded and init.epoch == acc.epoch:
                out[id(init)] = ("dead", None)
        else:
            if load is not None:
                out[id(load)] = ("forwarded", None) if all_unrolled else ("reload4", hoist)
    return out


def count(op: str, shape: dict, knobs, target: str, func) -> Counts:
    col = _Collector(_tvm_unrolled(func.body))
    col.stmt(func.body, [], [])
    space = _Space(Names())
    cuda = target == "cuda"
    params = {p.name for p in func.params}
    per_tensor: dict = {}
    ncu_inst = {"global_ld": 0, "global_st": 0, "shared_ld": 0, "shared_st": 0, "ldgsts": 0}
    vector_inst = {"global": 0, "shared": 0, "register": 0}
    scalar_inst = {"global": 0, "shared": 0, "register": 0}
    sectors = 0
    used = set()
    runs: dict = {}                     # commit index -> the branch tests of its async copies
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
        issues, region = _issue_conds(site, unr, col.if_sole, col.if_tail, col.if_copy, used)
        if site.async_copy and gl and site.kind == "read" and site.commit >= 0:
            runs.setdefault(site.commit, {})[tuple(str(c) for c in issues[0]) if len(issues) == 1 else
                                             ("?",)] = issues[0] if len(issues) == 1 else []

        def inst(drop, site=site, issues=issues):
            return sum(_count_site(site, space, drop, False, iss)[1] for iss in issues)
        effect, hoist = acc.get(id(site), (None, None))
        if effect in ("forwarded", "dead"):
            inst_n, sec_n = 0, 0
            used.add("accumulator")
        elif effect in ("promoted", "reload4"):
            inst_n = inst(hoist)
            _, _, sec_n = _count_site(site, space, hoist, want_sectors)
            if effect == "reload4":
                inner = max(hoist)
                inst_n *= -(-site.loops[inner][1] // 4)
                sec_n = None if sec_n is None else sec_n * -(-site.loops[inner][1] // 4)
            used.add("accumulator")
        else:
            body, per_copy = None, False
            if site.kind == "read":
                body = _instance(site, space, region, merge=not gl)
                if body is None and not gl:
                    tvm_u = {i for i in unr if site.loops[i][3] == TVM_UNROLLED}
                    body = _per_copy(site, tvm_u)
                    # the per-copy count holds where every warp issues every copy
                    per_copy = body is not None and inst(set()) == inst(tvm_u) * body[0]
                    body, region = (body, tvm_u) if per_copy else (None, region)
                if body is not None and body[1] >= body[0]:
                    body = None
            if body is not None:           # one unrolled body issues body[1] loads instead of body[0]
                used.add("cse" if gl else "merge")
                if per_copy:
                    used.add("constant_copy")
                inst_n = inst(region)
                _, _, sec_n = _count_site(site, space, region, want_sectors)
                inst_n *= body[1]
                sec_n = None if sec_n is None else sec_n * body[1]
            else:
                inst_n = inst(set())
                _, _, sec_n = _count_site(site, space, set(), want_sectors) if want_sectors else (0, 0, 0)
                if gl and site.kind == "read" and len(issues) == 1:
                    extra = _first_arm_hoisted(site, issues[0], col, space)
                    if extra:
                        inst_n += extra
                        used.add("first_arm")
            if any(c[1] == "ite" for c in site.conds) and site.kind == "read":
                used.add("predicated")
        if _DEBUG:
            print(f"  {site.name:16s} {site.kind:5s} inst={inst_n!s:>10} sec={sec_n!s:>10} effect={effect} "
                  f"region={sorted(region)} issue={[[str(c) for c in iss] for iss in issues]}")
        if site.async_copy:             # the LDGSTS is counted once, at its global read
            used.add("ldgsts")
            ncu_inst["ldgsts"] += inst_n if gl and site.kind == "read" else 0
        else:
            ncu_inst[f"{'global' if gl else 'shared'}_{'ld' if site.kind == 'read' else 'st'}"] += inst_n
        if want_sectors:
            sectors = None if sectors is None or sec_n is None else sectors + sec_n
            if site.lanes > 1:
                used.add("requests")
    if cuda:
        # three `@!PT LDS RZ, [RZ]` before each run of LDGSTS: a commit group's copies under different
        # branch tests are separate runs, each with its fences inside its branch
        for j, c in enumerate(col.commits):
            for test in (runs.get(j) or {(): []}).values():
                ncu_inst["shared_ld"] += 3 * _count_site(c, space, set(), False, [x[0] for x in c.conds] + test)[1]
    o = OPS[op]
    ncu = {}
    if cuda and sectors is None:
        used.add("sectors")
    if cuda:
        ncu = {"smsp__inst_executed_op_global_ld.sum": ncu_inst["global_ld"],
               "smsp__inst_executed_op_global_st.sum": ncu_inst["global_st"],
               "smsp__inst_executed_op_shared_ld.sum": ncu_inst["shared_ld"],
               "smsp__inst_executed_op_shared_st.sum": ncu_inst["shared_st"],
               "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": sectors,
               "smsp__inst_executed_op_ldgsts.sum": ncu_inst["ldgsts"]}
    return Counts(per_tensor=per_tensor,
                  instructions={"scalar": scalar_inst, "vector": vector_inst},
                  ncu=ncu, effects=tuple(EFFECTS[e] for e in sorted(used)),
                  flops=o.flops(shape), min_bytes=o.min_bytes(shape),
                  blocks=sum(col.blocks) if col.blocks else 1, threads=col.threads,
                  method="closed-form products, with the predicates' variables enumerated per independent "
                         "component")
