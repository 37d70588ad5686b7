"""The simulator's plain records and the pure summaries the pictures need (no TVM, no GPU).

traffic.py emits these; viz/ and the pages read them. Tests build them by hand.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np

LEVELS = ("global", "shared", "register")
LOCAL = "local"         # per-thread local memory: only in the machine's view (spills, arrays indexed at run time)
KINDS = ("read", "write", "barrier")


@dataclass(frozen=True)
class Access:
    """One element access by one thread, in the order the tile trace plays them."""
    step: int                   # position in the trace
    phase: int                  # barrier-delimited phase: shared fills and compute are separate phases
    block: int                  # linear block index (blockIdx.x; 0 on the CPU)
    thread: int                 # linear thread index inside the block (0 on the CPU)
    tensor: str                 # the operator's tensor the element belongs to: A, B, C, W, X, P or D
    index: tuple[int, ...]      # index into that tensor (its own shape); () for a barrier
    level: str                  # global | shared | register
    kind: str                   # read | write | barrier
    buffer: str = ""            # the buffer touched: A, A_shared, A_shared_local, C_local, ...


@dataclass(frozen=True)
class Trace:
    op: str
    shape: dict
    target: str
    knobs: str
    records: tuple[Access, ...]
    blocks: int                 # blocks launched (1 on the CPU)
    threads: int                # threads per block (1 on the CPU)
    tensors: dict = field(default_factory=dict)     # tensor name -> shape
    inputs: tuple[str, ...] = ()
    output: str = "C"

    @property
    def phases(self) -> int:
        return 1 + max((r.phase for r in self.records), default=0)


@dataclass(frozen=True)
class Counts:
    """Exact counts for one kernel at full size."""
    per_tensor: dict            # what the schedule asks for: tensor -> level -> {"read": n, "write": n} (elements)
    instructions: dict          # {"asked": tensor -> level -> {"read", "write"}}: the TensorIR's accesses
                                # (warp-level on CUDA: one per warp with a lane in range)
    ncu: dict                   # Nsight Compute metric name -> count of the emulated SASS (CUDA only)
    differences: tuple[str, ...]    # why the SASS's counts differ from the TensorIR's, in words
    flops: int
    min_bytes: int
    blocks: int = 1
    threads: int = 1
    method: str = ""            # how the counts were obtained (closed form, enumeration)
    machine: dict = field(default_factory=dict)     # the SASS view: instructions per class and per tensor,
                                                    # sass_hash, seconds; or {"error": sentence}

    def as_dict(self) -> dict:
        d = asdict(self)
        d["differences"] = list(self.differences)
        return d

    def level_totals(self, kind: str = "read") -> dict[str, int]:
        out = Counter()
        for lv in self.per_tensor.values():
            for level, v in lv.items():
                out[level] += v[kind]
        return {lvl: int(out[lvl]) for lvl in LEVELS}

    def intensity(self) -> dict[str, float]:
        """FLOPs per byte moved at each level: the x coordinate of a roofline point per level."""
        rd, wr = self.level_totals("read"), self.level_totals("write")
        return {lvl: self.flops / max(4 * (rd[lvl] + wr[lvl]), 1) for lvl in LEVELS}


def totals(records, upto: int | None = None, thread: int | None = None, block: int | None = None,
           kind: str = "read") -> dict[str, int]:
    """Per-level counts of `kind` accesses with step <= upto, optionally for one thread / block."""
    out = dict.fromkeys(LEVELS, 0)
    for r in records:
        if upto is not None and r.step > upto:
            break
        if r.kind != kind or (thread is not None and r.thread != thread) or (block is not None and r.block != block):
            continue
        out[r.level] = out.get(r.level, 0) + 1
    return out


def running(records, thread: int | None = None, block: int | None = None) -> list[dict[str, int]]:
    """Per-level read totals after each record (the animation's counters), for one thread/block or all."""
    cur = dict.fromkeys(LEVELS, 0)
    out = []
    for r in records:
        if r.kind == "read" and (thread is None or r.thread == thread) and (block is None or r.block == block):
            cur = {**cur, r.level: cur.get(r.level, 0) + 1}
        out.append(cur)
    return out


def reads_per_element(records, tensor: str, shape: tuple[int, ...], level: str | None = "global") -> np.ndarray:
    """How many times each element of `tensor` was read (from `level`, or from any level): the reuse map."""
    out = np.zeros(shape, dtype=np.int64)
    for r in records:
        if r.kind == "read" and r.tensor == tensor and (level is None or r.level == level) and r.index:
            out[r.index] += 1
    return out


def max_global_reads(records, tensor: str) -> int:
    """Global reads of the most-read element of `tensor`."""
    c = Counter(r.index for r in records if r.kind == "read" and r.tensor == tensor and r.level == "global")
    return max(c.values(), default=0)


def passes_line(passes: int, naive: int, shared: int, local: int) -> str:
    """The seed's comparison line, from computed numbers."""
    return f"over {passes} passes: naive {naive}, shared {shared}, local {local}"


def describe(r: Access, so_far: int) -> str:
    """The seed's caption for one step, e.g. 'thread 3 reads one element of A straight from global memory'."""
    if r.kind == "barrier":
        return f"block {r.block}: barrier, every thread waits until the shared tile is complete"
    idx = ", ".join(map(str, r.index))
    if r.kind == "write":
        where = {"global": "to global memory", "shared": "into shared memory", "register": "into its registers",
                 LOCAL: "to its local memory"}
        return f"thread {r.thread} of block {r.block} writes {r.tensor}[{idx}] {where[r.level]}"
    where = {"global": "straight from global memory", "shared": "from shared memory",
             "register": "from its registers", LOCAL: "from its local memory"}[r.level]
    return f"thread {r.thread} of block {r.block} reads {r.tensor}[{idx}] {where}; {r.level} reads so far: {so_far}"


def rows_json(doc: dict, rows: str) -> str:
    """`doc` as JSON text with its `rows` entry (a list, or a dict of entries) one compact entry a line and every
    other key on a line of its own: the large data files (held-out batches, shipped counts) diff line by line and
    are a third smaller than indented JSON, which keeps the tree inside what a device call carries."""
    def one(v) -> str:
        return json.dumps(v, separators=(",", ":"), default=str)
    out = []
    for k, v in doc.items():
        if k == rows and isinstance(v, dict):
            inner = ",\n".join(f"  {json.dumps(a)}: {one(b)}" for a, b in v.items())
            out.append(f" {json.dumps(k)}: {{\n{inner}\n }}")
        elif k == rows and isinstance(v, list):
            out.append(f" {json.dumps(k)}: [\n" + ",\n".join(f"  {one(b)}" for b in v) + "\n ]")
        else:
            out.append(f" {json.dumps(k)}: {one(v)}")
    return "{\n" + ",\n".join(out) + "\n}\n"
