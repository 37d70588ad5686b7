"""Run a lowered CUDA or CPU PrimFunc in Python, thread by thread, logging every element access.

Threads of a block run as generators that yield at each barrier, so a phase (between barriers) of
every thread completes before any thread starts the next one: the order a barrier guarantees.
Values are real (float64), so the same run also checks the kernel's result on the CPU.
"""
from __future__ import annotations

import numpy as np

from ._tirpy import ExprPrinter, Names, children, is_sync, scope_of, thread_extent

READ, WRITE = 0, 1
TASKS = 1 << 40             # ids of the parallel tasks of one loop execution: epoch * TASKS + iteration + 1


class RaceError(RuntimeError):
    """Two thread blocks wrote the same global element."""


class _Buf:
    def __init__(self, bid: int, name: str, scope: str, size: int):
        self.id, self.name, self.scope, self.size = bid, name, scope, size
        self.param = False          # a kernel argument (declared, not allocated inside the function)


class Program:
    """Python source for each kernel of a lowered PrimFunc, plus the buffer table."""

    def __init__(self, func):
        self.names = Names()
        self.bufs: list[_Buf] = []
        self._by_data: list = []          # (buffer var, _Buf)
        self.kernels: list[tuple[str, int, int]] = []    # (function name, blocks, threads)
        self.src: list[str] = []
        self._kernel_lines: list[str] | None = None
        self._host: list[str] = []
        self._bodies: list[tuple[str, list[str]]] = []
        self._walk_host(func.body)
        if not self.kernels:              # a CPU function: the whole body is one "kernel"
            self._bodies.append(("kernel_0", [l for l in self._host if "_G[" not in l]))
            self.kernels.append(("kernel_0", 1, 1))
        bind = [f"    {self.arr(b)} = _G[{b.id}]" for b in self.bufs if b.scope == "global"]
        for name, lines in self._bodies:          # every kernel sees every global buffer
            self.src += [f"def {name}(_bx, _tx, _S):", "    if False: yield", "    _L = {}"] + bind + lines

    # -------------------------------------------------------------- buffers
    def buf(self, b) -> _Buf:
        """One _Buf per storage: buffers are Vars in TVM 0.27; a global view (A_1 = A.view(..)) shares A's."""
        for var, info in self._by_data:
            if var.same_as(b):
                return info
        scope = scope_of(b)
        if scope == "global":
            for var, info in self._by_data:
                if info.scope == "global" and info.name == b.name:
                    self._by_data.append((b, info))
                    return info
        size = 1
        for d in b.shape:
            size *= int(d)
        info = _Buf(len(self.bufs), b.name, scope, size)
        self.bufs.append(info)
        self._by_data.append((b, info))
        return info

    def arr(self, info: _Buf) -> str:
        return f"M{info.id}"

    # -------------------------------------------------------------- statements
    def _walk_host(self, s):
        te = thread_extent(s)
        if te and te[0].startswith("blockIdx"):
            self._kernel(s)
            return
        t = type(s).__name__
        if t == "DeclBuffer":
            self.buf(s.buffer).param = True
            return
        if t == "SeqStmt" or (t == "AttrStmt" and not te):   # a pragma around a kernel launch
            for c in children(s):
                self._walk_host(c)
            return
        self._stmt(s, 1, self._host)

    def _kernel(self, s):
        name = f"kernel_{len(self.kernels)}"
        lines: list[str] = []
        threads = [1]

        def find_threads(n):
            te = thread_extent(n)
            if te and te[0].startswith("threadIdx"):
                threads[0] *= te[2]
            for c in children(n):
                find_threads(c)
        find_threads(s)
        self._stmt(s, 1, lines)
        self._bodies.append((name, lines))
        self.kernels.append((name, int(s.value), threads[0]))

    def _expr(self, e) -> str:
        return ExprPrinter(self.names, lambda ld, idx: f"_ld({self.arr(self.buf(ld.source))}, "
                                                       f"{self.buf(ld.source).id}, {idx})")(e)

    def _stmt(self, s, ind: int, out: list[str]):
        pad = "    " * ind
        t = type(s).__name__
        te = thread_extent(s)
        if te:
            tag, var, ext = te
            v = self.names(var, var.name)
            if tag.startswith("blockIdx"):
                out.append(f"{pad}{v} = _bx")
            else:   # threadIdx.x only (schedules fuse threads); y/z would index the remainder
                out.append(f"{pad}{v} = _tx")
            self._stmt(s.body, ind, out)
        elif t == "SeqStmt":
            for c in s.seq:
                self._stmt(c, ind, out)
        elif t in ("AttrStmt", "AssertStmt"):
            self._stmt(s.body, ind, out)
        elif t == "DeclBuffer":
            self.buf(s.buffer)                  # a view of a global buffer, bound at the kernel's start
            if getattr(s, "body", None) is not None:
                self._stmt(s.body, ind, out)
        elif t == "AllocBuffer":
            info = self.buf(s.buffer)
            if info.scope.startswith("shared"):
                out.append(f"{pad}{self.arr(info)} = _shared(_S, {info.id}, {info.size})")
            elif info.scope == "global":
                pass                            # allocated once for the whole run, bound at the kernel's start
            else:   # one slot per thread, reused when the allocation sits in a loop (as a C stack array is)
                out.append(f"{pad}{self.arr(info)} = _shared(_L, {info.id}, {info.size})")
            if getattr(s, "body", None) is not None:
                self._stmt(s.body, ind, out)
        elif t == "For":
            v = self.names(s.loop_var, s.loop_var.name)
            lo, ext = self._expr(s.min), self._expr(s.extent)
            par = str(s.kind).endswith("parallel") or int(s.kind) == 1
            if par:                 # each iteration is a task on its own core: writes are checked for races
                out.append(f"{pad}_par_begin()")
            out.append(f"{pad}for {v} in range({lo}, {lo} + {ext}):")
            if par:
                out.append(f"{pad}    _par({v})")
            n = len(out)
            self._stmt(s.body, ind + 1, out)
            if len(out) == n:
                out.append(f"{pad}    pass")
            if par:
                out.append(f"{pad}_par_end()")
        elif t == "IfThenElse":
            out.append(f"{pad}if {self._expr(s.condition)}:")
            n = len(out)
            self._stmt(s.then_case, ind + 1, out)
            if len(out) == n:
                out.append(f"{pad}    pass")
            if s.else_case is not None:
                out.append(f"{pad}else:")
                n = len(out)
                self._stmt(s.else_case, ind + 1, out)
                if len(out) == n:
                    out.append(f"{pad}    pass")
        elif t == "BufferStore":
            info = self.buf(s.buffer)
            idx = self._expr(s.indices[0])
            out.append(f"{pad}_st({self.arr(info)}, {info.id}, {idx}, {self._expr(s.value)})")
        elif t == "LetStmt":
            out.append(f"{pad}{self.names(s.var, s.var.name)} = {self._expr(s.value)}")
            self._stmt(s.body, ind, out)
        elif t == "Evaluate":
            if is_sync(s):
                out.append(f"{pad}yield")
        else:
            raise NotImplementedError(f"{t} in the lowered TensorIR")


def _ramp(base, stride, lanes):
    return base + stride * np.arange(lanes)


def _bcast(v, lanes):
    return np.full(lanes, v)


def _tdiv(a, b):
    return np.trunc(np.divide(a, b)).astype(np.int64) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) \
        else int(a / b)


def _tmod(a, b):
    return a - b * _tdiv(a, b)


def _shared(S, bid, size):
    if bid not in S:
        S[bid] = np.full(size, np.nan)
    return S[bid]


def run(prog: Program, inputs: dict[int, np.ndarray]):
    """Execute every kernel; returns (log, global arrays). The log holds tuples:
    (bid, index or index array, READ/WRITE) for accesses, ('T', block, thread, phase) when the running thread
    changes, ('B', block, phase) for a barrier."""
    log: list = []
    append = log.append

    def _ld(arr, bid, i):
        append((bid, i, READ))
        if (i.min() if isinstance(i, np.ndarray) else i) < 0:
            raise IndexError(f"the kernel reads before the start of buffer {prog.bufs[bid].name}")
        return arr[i]

    owner: dict = {}        # global buffer id -> writer of each element: block + 1, or a parallel task's id
    cur = [0]               # 0: serial code; a block b: b + 1; a parallel task: epoch * TASKS + iteration + 1
    epoch = [0]

    def _par_begin():
        epoch[0] += 1

    def _par(i):
        cur[0] = epoch[0] * TASKS + i + 1

    def _par_end():
        cur[0] = 0

    def _st(arr, bid, i, v):
        append((bid, i, WRITE))
        if (i.min() if isinstance(i, np.ndarray) else i) < 0:
            raise IndexError(f"the kernel writes before the start of buffer {prog.bufs[bid].name}")
        arr[i] = v
        o = owner.get(bid)
        if o is not None:
            prev = o[i]
            if cur[0] and np.any((prev > 0) & (prev != cur[0]) & (prev // TASKS == cur[0] // TASKS)):
                raise RaceError(f"two thread blocks (or parallel tasks) write the same element of "
                                f"{prog.bufs[bid].name}: the "
                                "result would depend on which block runs last")
            o[i] = cur[0]

    G = {}
    for b in prog.bufs:
        if b.id in inputs:
            G[b.id] = inputs[b.id]
        elif not b.scope.startswith("shared") and b.scope != "local":
            G[b.id] = np.full(b.size, np.nan)
        if b.param and b.scope == "global":      # allocations inside a parallel loop are private per task
            owner[b.id] = np.zeros(b.size, dtype=np.int64)
    env = {"np": np, "_ld": _ld, "_st": _st, "_par_begin": _par_begin, "_par": _par, "_par_end": _par_end, "_G": G, "_ramp": _ramp, "_bcast": _bcast, "_tdiv": _tdiv,
           "_tmod": _tmod, "_shared": _shared, "_int": lambda x: np.asarray(x).astype(np.int64) if
           isinstance(x, np.ndarray) else int(x), "_float": float, "_bool": bool}
    exec(compile("\n".join(prog.src), "<lowered TensorIR>", "exec"), env)
    phase = 0
    for name, blocks, threads in prog.kernels:
        fn = env[name]
        for o in owner.values():
            o[:] = 0            # a new kernel may rewrite what an earlier one wrote
        for b in range(blocks):
            cur[0] = b + 1 if blocks > 1 else 0
            S: dict = {}
            alive = [(t, fn(b, t, S)) for t in range(threads)]
            while alive:
                nxt = []
                for t, g in alive:
                    append(("T", b, t, phase))
                    try:
                        next(g)
                        nxt.append((t, g))
                    except StopIteration:
                        pass
                if nxt:
                    append(("B", b, phase))
                    phase += 1
                alive = nxt
            phase += 1
    return log, G
