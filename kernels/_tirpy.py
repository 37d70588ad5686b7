"""Lowered TensorIR -> Python source: the interpreter behind the tile trace and the exact counter.

Two flavours of the same expression printer:
  scalar  plain Python ints/floats (the trace runs the kernel thread by thread, barriers as `yield`);
  array   numpy arrays over an enumerated iteration space (the counter evaluates predicates and addresses).
"""
from __future__ import annotations

import itertools

_BIN = {"Add": "+", "Sub": "-", "Mul": "*", "FloorDiv": "//", "FloorMod": "%",
        "LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "EQ": "==", "NE": "!="}


class Names:
    """Stable Python identifiers for TIR variables and buffers (keyed by the TVM object)."""

    def __init__(self):
        self._ids: list = []        # (object, name): TVM expressions overload ==, so no dict keys
        self._n = itertools.count()

    def __call__(self, obj, hint: str) -> str:
        for k, v in self._ids:
            if k.same_as(obj):
                return v
        name = f"{''.join(c if c.isalnum() else '_' for c in hint)}_{next(self._n)}"
        self._ids.append((obj, name))
        return name


class ExprPrinter:
    def __init__(self, names: Names, load, array: bool = False, subst: dict | None = None):
        self.names = names
        self.load = load            # callback(BufferLoad, printed index) -> source text
        self.array = array
        self.subst = subst or {}    # sub-expression text -> a name to print instead (see _count._compress)

    def __call__(self, e) -> str:
        t = type(e).__name__
        if self.subst and t not in ("IntImm", "FloatImm"):
            hit = self.subst.get(str(e))
            if hit is not None:
                return hit
        if t == "IntImm":
            return str(int(e.value)) if str(e.ty) != "bool" else str(bool(e.value))
        if t == "FloatImm":
            return repr(float(e.value))
        if t == "Var":
            return self.names(e, e.name)
        if t in _BIN:
            return f"({self(e.a)} {_BIN[t]} {self(e.b)})"
        if t == "Div":
            if str(e.ty).startswith("float"):
                return f"({self(e.a)} / {self(e.b)})"
            return f"_tdiv({self(e.a)}, {self(e.b)})"
        if t == "Mod":
            return f"_tmod({self(e.a)}, {self(e.b)})"
        if t in ("Min", "Max"):
            f = ("np.minimum" if t == "Min" else "np.maximum") if self.array else t.lower()
            return f"{f}({self(e.a)}, {self(e.b)})"
        if t in ("And", "Or"):
            op = ("&" if t == "And" else "|") if self.array else t.lower()
            return f"({self(e.a)} {op} {self(e.b)})"
        if t == "Not":
            return f"(~{self(e.a)})" if self.array else f"(not {self(e.a)})"
        if t == "Select":
            return self._select(e.condition, e.true_value, e.false_value)
        if t == "Cast":
            if str(e.ty).startswith("float"):
                return f"_float({self(e.value)})"
            if str(e.ty) == "bool":
                return f"_bool({self(e.value)})"
            return f"_int({self(e.value)})"
        if t == "Ramp":
            return f"_ramp({self(e.base)}, {self(e.stride)}, {int(e.lanes)})"
        if t == "Broadcast":
            return f"_bcast({self(e.value)}, {int(e.lanes)})"
        if t == "Let":
            return f"(({self.names(e.var, e.var.name)} := {self(e.value)}), {self(e.body)})[1]"
        if t in ("TensorLoad", "BufferLoad"):
            return self.load(e, self(e.indices[0]) if len(e.indices) == 1 else
                             "(" + ", ".join(self(i) for i in e.indices) + ",)")
        if t == "Call":
            op = e.op.name.split(".")[-1]
            if op == "if_then_else":
                return self._select(*e.args)
            if op == "likely":
                return self(e.args[0])
            if op == "fabs":
                return f"abs({self(e.args[0])})"
            raise NotImplementedError(f"call {op} in the lowered TensorIR")
        raise NotImplementedError(f"{t} in the lowered TensorIR")

    def _select(self, c, a, b) -> str:
        if self.array:
            return f"np.where({self(c)}, {self(a)}, {self(b)})"
        return f"({self(a)} if {self(c)} else {self(b)})"


def children(s):
    """The statements directly under s, in order."""
    t = type(s).__name__
    if t == "SeqStmt":
        return list(s.seq)
    if t == "IfThenElse":
        return [s.then_case] + ([s.else_case] if s.else_case is not None else [])
    if hasattr(s, "body") and s.body is not None:
        return [s.body]
    return []


def thread_extent(s):
    """(tag, var, extent) if s launches a thread or block index, else None."""
    if type(s).__name__ == "AttrStmt" and s.attr_key == "thread_extent":
        return s.node.thread_tag, s.node.var, int(s.value)
    return None


def is_sync(s) -> bool:
    return (type(s).__name__ == "Evaluate" and type(s.value).__name__ == "Call"
            and s.value.op.name.endswith("tvm_storage_sync"))


def scope_of(buf) -> str:
    try:
        return buf.scope() or "global"
    except Exception:       # noqa: BLE001
        return "global"


def level_of(scope: str) -> str:
    return {"shared": "shared", "shared.dyn": "shared", "local": "register"}.get(scope, "global")


def tensor_of(name: str) -> str:
    """A_shared_local -> A, X_pad_shared -> X_pad, C_local -> C; parameter views keep their name's root."""
    base = name
    for suf in ("_local", "_shared", "_global"):
        while base.endswith(suf):
            base = base[: -len(suf)]
    if base.endswith("_1") and base[:-2]:
        base = base[:-2]
    return base


def free_vars(e) -> list:
    out = []

    def visit(n):
        if type(n).__name__ == "Var" and not any(v.same_as(n) for v in out):
            out.append(n)
    _visit(e, visit)
    return out


def _visit(e, f):
    """Pre-order walk over an expression's sub-expressions (loads: TensorLoad, whose .source is the buffer)."""
    f(e)
    t = type(e).__name__
    if t in _BIN or t in ("Div", "Mod", "Min", "Max", "And", "Or"):
        _visit(e.a, f), _visit(e.b, f)
    elif t == "Not":
        _visit(e.a, f)
    elif t == "Select":
        _visit(e.condition, f), _visit(e.true_value, f), _visit(e.false_value, f)
    elif t == "Cast":
        _visit(e.value, f)
    elif t == "Ramp":
        _visit(e.base, f), _visit(e.stride, f)
    elif t == "Broadcast":
        _visit(e.value, f)
    elif t == "Let":
        _visit(e.value, f), _visit(e.body, f)
    elif t in ("TensorLoad", "BufferLoad"):
        for i in e.indices:
            _visit(i, f)
    elif t == "Call":
        for a in e.args:
            _visit(a, f)
