"""One accelerator instruction, executed whole: a lowered loop nest around one store, run with numpy.

An instruction is what a `pragma_fpga_*` AttrStmt wraps in the lowered TensorIR: For loops (and `if`
guards) around a single BufferStore. Its iteration space is enumerated at once: every loop variable becomes
an array over the points where the guards hold, and the store's index and value are evaluated on those
arrays (each branch of an `if_then_else` only on the points that take it, so a zero-padding load never
reads outside its tensor). A store X[i] = X[i] + v (the GEMM core's accumulation) adds every point's v
into its element (np.add.at); any other store writes each element once.

Accesses are reported per buffer as counts of distinct elements. For a GEMM instruction they are distinct
per core operation: the loops outside the innermost two (BLOCK_OUT x BLOCK_IN) number the operations, and
an element an operation reads counts once for that operation (the core reads each operand once per
operation). An operation is issued when at least one of its lanes passes the guards.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_NP = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide, "FloorMod": np.mod,
       "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal, "EQ": np.equal,
       "NE": np.not_equal, "Min": np.minimum, "Max": np.maximum, "And": np.logical_and, "Or": np.logical_or}
SHIFT = 1 << 40             # (operation, element) pairs packed in one int64


@dataclass
class Access:
    """What one instruction did to one buffer: distinct elements read and written (per core operation for
    GEMM), and the lowest and highest element touched (the range the pipeline model tracks)."""
    reads: int = 0
    writes: int = 0
    lo: int = 1 << 62
    hi: int = -1
    read_idx: list = field(default_factory=list)     # kept for traces: (elements, operation ids) per access
    write_idx: list = field(default_factory=list)


@dataclass
class Done:
    """One execution of an instruction."""
    kind: str                                       # load | reset | gemm | store
    access: dict[int, Access]                       # buffer id -> what happened to it
    core_ops: int = 0
    points: int = 0                                 # active points of the loop nest (MACs for GEMM)


class Nest:
    """A pragma_fpga_* loop nest of the lowered PrimFunc, compiled once and executed many times.

    buf_of(buffer) gives the interpreter's buffer record (id, name, scope, size); name_of(var) the Python
    name the interpreter gave an outer variable; block = the core's (BLOCK_OUT, BLOCK_IN)."""

    def __init__(self, attr, buf_of, name_of, block: tuple[int, int]):
        self.kind = attr.attr_key[len("pragma_fpga_"):]
        loops, conds, s = [], [], attr.body
        while True:
            t = type(s).__name__
            if t == "For":
                loops.append(s)
                s = s.body
            elif t == "IfThenElse" and s.else_case is None:
                conds.append(s.condition)
                s = s.then_case
            elif t == "AttrStmt":
                s = s.body
            elif t == "BufferStore":
                break
            else:
                raise NotImplementedError(f"fpga: a {self.kind} instruction holds a {t}; an instruction is loops "
                                          "and guards around one store")
        self.buf_of = buf_of
        exprs = [s.value, s.indices[0], *conds] + [x for f in loops for x in (f.min, f.extent)]
        self.outer: list = []                       # variables bound outside the instruction, in call order
        for e in exprs:
            for v in _vars(e):
                if not any(v.same_as(f.loop_var) for f in loops) and not any(v.same_as(o) for o in self.outer):
                    self.outer.append(v)
        self.outer_names = [name_of(v) for v in self.outer]
        slots = list(self.outer) + [f.loop_var for f in loops]
        c = _Compiler(slots, buf_of)
        self.n_outer = len(self.outer)
        self.mins = [c(f.min) for f in loops]
        self.exts = [c(f.extent) for f in loops]
        self.conds = [c(x) for x in conds]
        self.store_buf = buf_of(s.buffer)
        self.store_idx = c(s.indices[0])
        term = _accumulation(s)
        self.accumulate = term is not None
        self.value = c(term if term is not None else s.value)
        self.gemm = self.kind == "gemm"
        self.product = None                         # (index fn, buffer) of both factors: the fast path
        if self.gemm:
            _check_core(self.kind, loops, s, term, block)
            f = [_strip_cast(x) for x in (term.a, term.b)] if type(term).__name__ == "Mul" else []
            if len(f) == 2 and all(type(x).__name__ in ("BufferLoad", "TensorLoad") for x in f):
                self.product = [(c(x.indices[0]), buf_of(_source(x))) for x in f]

    def run(self, outer_vals, array_of, keep: bool = False) -> Done:
        vals = list(outer_vals)
        ext = [int(f(vals, None, None)) for f in self.exts]
        lo = [int(f(vals, None, None)) for f in self.mins]
        if self.product is not None and not keep:
            done = self._fast(vals, ext, lo, array_of)
            if done is not None:
                return done
        n = int(np.prod(ext)) if ext else 1
        grid = np.indices(ext).reshape(len(ext), -1) if ext else np.zeros((0, 1), np.int64)
        full = vals + [row + m for row, m in zip(grid, lo)]
        sel = np.ones(n, bool)
        for f in self.conds:
            sel &= np.broadcast_to(np.asarray(f(full, None, None), bool), (n,))
        pts = np.nonzero(sel)[0]
        vals = [v[pts] if isinstance(v, np.ndarray) else v for v in full]
        n_op = len(ext) - 2 if self.gemm else 0
        op = (np.ravel_multi_index(grid[:n_op][:, pts], ext[:n_op]) if n_op > 0
              else np.zeros(len(pts), np.int64))
        done = Done(self.kind, {}, int(np.unique(op).size) if self.gemm and len(pts) else 0, len(pts))
        ctx = _Ctx(array_of, done, op, keep, len(pts))
        whole = np.arange(len(pts))
        idx = np.broadcast_to(np.asarray(self.store_idx(vals, ctx, whole), np.int64), (len(pts),))
        info, target = self.store_buf, array_of(self.store_buf)
        if self.accumulate:
            ctx.load(info, idx, whole)                      # the old value, once per element and operation
            v = np.broadcast_to(self.value(vals, ctx, whole), (len(pts),))
            target += np.bincount(idx, weights=v, minlength=target.size).astype(target.dtype)
        else:
            v = np.broadcast_to(self.value(vals, ctx, whole), (len(pts),))
            if _distinct(idx) != idx.size:
                raise RuntimeError(f"fpga: one {self.kind} instruction writes an element of {info.name} twice")
            _bounds(idx, info)
            target[idx] = v
        ctx.record(info, idx, whole, write=True)
        return done


    def _fast(self, vals, ext, lo, array_of) -> Done | None:
        """A GEMM instruction whose guards all hold, run as one einsum over the loop axes each factor uses;
        the distinct elements per core operation counted per row of the operations' own axes. Exact, and the
        same numbers as the enumeration; None when a guard fails somewhere (an edge tile: enumerate it)."""
        d = len(ext)
        axes = [np.arange(e).reshape([1] * i + [e] + [1] * (d - i - 1)) + m for i, (e, m) in enumerate(zip(ext, lo))]
        full = vals + axes
        if not all(np.asarray(c(full, None, None), bool).all() for c in self.conds):
            return None
        n_op = d - 2
        done = Done(self.kind, {}, int(np.prod(ext[:n_op])) if n_op > 0 else 1, int(np.prod(ext)))
        fs = _shaped(self.store_idx(full, None, None), d)
        factors = []
        for fn, info in self.product:
            f = _shaped(fn(full, None, None), d)
            _bounds(f, info)
            _count(done, info, f, ext, n_op, write=False)
            factors.append((array_of(info)[f], f.shape))
        _bounds(fs, self.store_buf)
        letters = "abcdefghijklmnopqrstuvwxyz"
        used = [{i for i in range(d) if sh[i] > 1} for _, sh in factors]
        out = [i for i in range(d) if fs.shape[i] > 1]
        inputs = set().union(*used)
        subs = [("".join(letters[i] for i in sorted(u)), x.reshape([x.shape[i] for i in sorted(u)]))
                for (x, _), u in zip(factors, used)]
        keep_out = [i for i in out if i in inputs]
        delta = np.einsum(",".join(a for a, _ in subs) + "->" + "".join(letters[i] for i in keep_out),
                          *[x for _, x in subs])
        spare = int(np.prod([ext[i] for i in range(d) if i not in inputs and i not in out]))
        shape = [ext[i] if i in keep_out else 1 for i in range(d)]
        delta = np.broadcast_to(delta.reshape(shape) * spare, fs.shape if fs.ndim else ())
        target = array_of(self.store_buf)
        _count(done, self.store_buf, fs, ext, n_op, write=False)
        target += np.bincount(np.ravel(fs), weights=np.ravel(delta), minlength=target.size).astype(target.dtype)
        _count(done, self.store_buf, fs, ext, n_op, write=True)
        return done


def _shaped(a, d: int) -> np.ndarray:
    a = np.asarray(a, np.int64)
    return a.reshape([1] * d) if a.ndim == 0 else a


def _count(done: Done, info, f: np.ndarray, ext, n_op: int, write: bool) -> None:
    """Distinct elements of f per core operation (the loops before the innermost two), all lanes active."""
    a = done.access.setdefault(info.id, Access())
    a.lo, a.hi = min(a.lo, int(f.min())), max(a.hi, int(f.max()))
    d = f.ndim
    rows = int(np.prod(f.shape[:n_op])) if n_op > 0 else 1
    per_row = np.sort(f.reshape(rows, -1), axis=1)
    distinct = (np.count_nonzero(np.diff(per_row, axis=1), axis=1) + 1).sum()
    shared = int(np.prod([ext[i] for i in range(n_op) if f.shape[i] == 1]))      # operations that see one row
    n = int(distinct) * shared
    del d
    if write:
        a.writes += n
    else:
        a.reads += n


def _strip_cast(e):
    while type(e).__name__ == "Cast":
        e = e.value
    return e


def _check_core(kind, loops, store, term, block) -> None:
    if term is None:
        raise NotImplementedError("fpga: a GEMM instruction must accumulate, X[i] = X[i] + a * b")
    if len(loops) < 2 or (int(loops[-2].extent), int(loops[-1].extent)) != tuple(block):
        got = "x".join(str(f.extent) for f in loops[-2:])
        raise NotImplementedError(f"fpga: the innermost loops of a GEMM instruction are {got}, not the core's "
                                  f"{block[0]} x {block[1]}")
    if any(v.same_as(loops[-1].loop_var) for v in _vars(store.indices[0])):
        raise NotImplementedError("fpga: the innermost loop of a GEMM instruction must run over the reduction "
                                  "(it indexes the accumulator here)")


class _Ctx:
    """Load and record accesses for one execution."""

    def __init__(self, array_of, done: Done, op: np.ndarray, keep: bool, n: int):
        self.array_of, self.done, self.op, self.keep, self.n = array_of, done, op, keep, n

    def load(self, info, idx, pos) -> np.ndarray:
        idx = np.broadcast_to(idx, pos.shape)
        _bounds(idx, info)
        self.record(info, idx, pos, write=False)
        return self.array_of(info)[idx]

    def record(self, info, idx, pos, write: bool) -> None:
        a = self.done.access.setdefault(info.id, Access())
        if idx.size:
            a.lo, a.hi = min(a.lo, int(idx.min())), max(a.hi, int(idx.max()))
        if self.keep or self.done.kind == "gemm":
            pairs = np.unique(self.op[pos] * SHIFT + idx) if self.done.kind == "gemm" else np.unique(idx)
            n = pairs.size
            if self.keep:
                (a.write_idx if write else a.read_idx).append((pairs % SHIFT, pairs // SHIFT))
        else:
            n = _distinct(idx)
        if write:
            a.writes += n
        else:
            a.reads += n


def _distinct(idx: np.ndarray) -> int:
    """How many different values idx holds (a histogram when they are dense, a sort otherwise)."""
    if idx.size == 0:
        return 0
    lo, hi = int(idx.min()), int(idx.max())
    if hi - lo <= 4 * idx.size:
        return int(np.count_nonzero(np.bincount(idx - lo)))
    return int(np.unique(idx).size)


def _bounds(idx: np.ndarray, info) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= info.size):
        raise IndexError(f"fpga: an instruction touches {info.name}[{int(idx.min())}..{int(idx.max())}], outside "
                         f"its {info.size} elements")


class _Compiler:
    """TIR expression -> f(vals, ctx, pos): vals[i] is slot i's value (a scalar, or an array over the active
    points); pos numbers those points within the instruction (for branches evaluated on a subset)."""

    def __init__(self, slots: list, buf_of):
        self.slots, self.buf_of = slots, buf_of

    def __call__(self, e):
        t = type(e).__name__
        if t == "IntImm":
            v = bool(e.value) if str(e.ty) == "bool" else int(e.value)
            return lambda vals, ctx, pos: v
        if t == "FloatImm":
            v = float(e.value)
            return lambda vals, ctx, pos: v
        if t == "Var":
            i = next((i for i, s in enumerate(self.slots) if s.same_as(e)), None)
            if i is None:
                raise KeyError(f"fpga: variable {e.name} is not bound where the instruction runs")
            return lambda vals, ctx, pos: vals[i]
        if t in _NP:
            f, a, b = _NP[t], self(e.a), self(e.b)
            return lambda vals, ctx, pos: f(a(vals, ctx, pos), b(vals, ctx, pos))
        if t in ("Div", "Mod"):
            a, b, flt, mod = self(e.a), self(e.b), str(e.ty).startswith("float"), t == "Mod"

            def div(vals, ctx, pos):
                x, y = a(vals, ctx, pos), b(vals, ctx, pos)
                if flt:
                    return np.true_divide(x, y)
                q = np.trunc(np.true_divide(x, y)).astype(np.int64)       # C division truncates
                return x - y * q if mod else q
            return div
        if t == "Not":
            a = self(e.a)
            return lambda vals, ctx, pos: np.logical_not(a(vals, ctx, pos))
        if t == "Cast":
            a, ty = self(e.value), str(e.ty)
            dt = np.float32 if ty.startswith("float") else (bool if ty == "bool" else np.int64)
            return lambda vals, ctx, pos: np.asarray(a(vals, ctx, pos), dt)
        if t == "Select":
            return self._branch(e.condition, e.true_value, e.false_value)
        if t == "Call":
            name = e.op.name.split(".")[-1]
            if name == "if_then_else":
                return self._branch(*e.args)
            if name == "likely":
                return self(e.args[0])
            raise NotImplementedError(f"fpga: call {name} inside an instruction")
        if t in ("BufferLoad", "TensorLoad"):          # 0.27 prints BufferLoad, names the node TensorLoad
            info, ix = self.buf_of(_source(e)), self(e.indices[0])
            return lambda vals, ctx, pos: ctx.load(info, np.asarray(ix(vals, ctx, pos), np.int64), pos)
        raise NotImplementedError(f"fpga: {t} inside an instruction")

    def _branch(self, c, a, b):
        """Each branch evaluated only on the points that take it."""
        fc, fa, fb = self(c), self(a), self(b)

        def branch(vals, ctx, pos):
            cv = fc(vals, ctx, pos)
            if not isinstance(cv, np.ndarray) or pos is None:
                return fa(vals, ctx, pos) if cv else fb(vals, ctx, pos)
            n = len(pos)
            cv = np.broadcast_to(cv, (n,))
            out = np.zeros(n, np.float32)
            for mask, f in ((cv, fa), (~cv, fb)):
                if mask.any():
                    sub = [v[mask] if isinstance(v, np.ndarray) and v.shape == (n,) else v for v in vals]
                    out[mask] = f(sub, ctx, pos[mask])
            return out
        return branch


def _accumulation(store):
    """The added term v when the store is X[i] = X[i] + v (or v + X[i]); None otherwise."""
    v = store.value
    if type(v).__name__ != "Add":
        return None
    for mine, other in ((v.a, v.b), (v.b, v.a)):
        if (type(mine).__name__ in ("BufferLoad", "TensorLoad") and _source(mine).same_as(store.buffer)
                and _same_expr(mine.indices[0], store.indices[0])):
            return other
    return None


def _same_expr(a, b) -> bool:
    import tvm_ffi
    return bool(tvm_ffi.structural_equal(a, b))


def _source(load):
    return load.source if hasattr(load, "source") else load.buffer


def _vars(e) -> list:
    from .._tirpy import free_vars
    return free_vars(e)
