"""Knobs of the fpga target: tile sizes, which operand stays resident, double buffering; buffer-fit rules.

Registered in kernels/knobs.py (KNOBS, PRESETS) like the CPU and GPU knobs. knobs.fit() and knobs.validate()
hand over to `fitted()` and `problems()` here, since these tiles are multiples of the GEMM core's block
rather than tiles of thread patches.

Which operand goes where. The buffers keep the operator's roles, so weights sit in the weight buffer:
  gemm    A -> input buffer (a row of 16 A values per core operation: the core's vector operand),
          B -> weight buffer (a 16 x 16 block per operation: its matrix operand), C -> accumulator
  conv1d  the padded signal A_pad -> input buffer (a window of tile + tile_k - 1 samples; an operation reads
          it as the 16 x 16 Toeplitz block A_pad[i + jb + kb]: the matrix operand), the kernel W -> weight
          buffer (16 taps shared by the operation's 16 outputs: the vector operand), C -> accumulator
          VTA reads its input buffer one 16-vector per cycle; reading a 31-sample window as a Toeplitz block
          needs a shift-register front end VTA does not have: here the conv1d mapping departs from VTA.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .accel import ACC, DEFAULT, FLOAT, INP, WGT

RESIDENT = {"gemm": ("acc", "inp", "wgt"), "conv1d": ("acc", "wgt")}


def _f(default, help: str, choices=None, lo: int = 1, hi: int = 1 << 20):
    return field(default=default, metadata={"help": help, "choices": choices, "lo": lo, "hi": hi})


def _resident(default, op):
    what = {"gemm": "acc = the output tile (output-stationary: A and B tiles stream through), inp = the A "
                    "tile (reused across every column tile of B), wgt = the B tile (reused across every row "
                    "tile of A)",
            "conv1d": "acc = the output tile (output-stationary: signal window and kernel tiles stream through), "
                      "wgt = the whole kernel W (loaded once, before every loop, reused by every output tile)"}[op]
    return _f(default, f"Which buffer keeps its tile while the loops around it sweep: {what}. The "
                       "accumulator then holds every output the resident tile contributes to.", RESIDENT[op])


def _double(default):
    return _f(default, "Two copies of each streaming tile (software pipelining): the DMA loads the next tile "
                       "while the GEMM core works on this one. Doubles the streaming buffers' footprint.",
              (False, True))


def _up(n: int, b: int) -> int:
    return -(-n // b) * b


@dataclass(frozen=True)
class FpgaPlan:
    """What the fpga engine schedules: the operator's tiles (elements) and where each stage sits."""
    op: str
    tiles: tuple[tuple[str, int], ...]       # (axis, tile)
    resident: str
    double_buffer: bool
    block_in: int
    block_out: int
    layout: "Layout"


@dataclass(frozen=True)
class Layout:
    """The loop nest both the schedule and the capacity rules follow.

    order     the tile loops, outermost first (the reduction tile loop is "k")
    anchors   buffer scope -> the tile loop its tile is loaded at (None: once, before every loop)
    piped     the loop that software pipelining double-buffers: the innermost tile loop with more than one
              iteration (loops inside it have one, so the stages anchored there move up to it); None if
              double_buffer is off or every loop has one iteration
    floats    buffer scope -> floats it holds, two slots counted for a double-buffered stage
    doubled   the buffers that get two slots (their tile is loaded at the piped loop)
    counts    tile loop -> iterations
    """
    order: tuple[str, ...]
    counts: tuple[tuple[str, int], ...]
    anchors: tuple[tuple[str, str | None], ...]
    piped: str | None
    floats: tuple[tuple[str, int], ...]
    doubled: tuple[str, ...]


def layout(op: str, tiles: dict, resident: str, double_buffer: bool, s) -> Layout:
    if op == "gemm":
        ext = {"m": s["M"], "n": s["N"], "k": s["K"]}
        order = {"acc": ("m", "n", "k"), "wgt": ("n", "k", "m"), "inp": ("m", "k", "n")}[resident]
        deps = {INP: ("m", "k"), WGT: ("k", "n"), ACC: ("m", "n")}
    else:
        ext = {"i": s["M"] + s["N"] - 1, "k": s["N"]}
        order = ("i", "k")
        deps = {INP: ("i", "k"), WGT: ("k",), ACC: ("i",)}
    counts = {a: -(-ext[a] // tiles[a]) for a in order}
    busy = [a for a in order if counts[a] > 1]
    inner = busy[-1] if busy else None
    pos = {a: i for i, a in enumerate(order)}

    def place(anchor):
        return inner if anchor is not None and inner is not None and pos[anchor] > pos[inner] else anchor

    anchors = {INP: max(deps[INP], key=pos.get), ACC: order[pos["k"] - 1],
               WGT: None if op == "conv1d" and resident == "wgt" else max(deps[WGT], key=pos.get)}
    anchors = {b: place(a) for b, a in anchors.items()}
    piped = inner if double_buffer else None
    doubled = tuple(b for b, a in anchors.items() if piped is not None and a == piped)
    floats = {}
    for b, a in anchors.items():
        n = 1
        for ax in deps[b]:
            outside = a is not None and pos[ax] <= pos[a]          # the loop over ax is at or outside the anchor
            n *= min(tiles[ax], ext[ax]) if outside else ext[ax]
        if op == "conv1d" and b == INP:                             # the signal window: outputs + taps - 1
            n = _window(tiles, s["M"] + 2 * s["N"] - 2)
        floats[b] = n * (2 if b in doubled else 1)
    return Layout(order, tuple(counts.items()), tuple(anchors.items()), piped, tuple(floats.items()), doubled)


def _window(tiles, padded: int) -> int:
    """Signal samples one tile reads: outputs + taps - 1, both counted as whole tiles even past the edge
    (the lowered copy runs over them and writes zero padding), at most the whole padded signal."""
    return min(tiles["i"] + tiles["k"] - 1, padded)


@dataclass(frozen=True)
class GemmFpga:
    tile_m: int = _f(16, "Rows of A and C per tile. The GEMM core takes one row per operation (batch 1), so a "
                         "k-step of a tile is tile_m x tile_n/16 x tile_k/16 core operations.")
    tile_n: int = _f(64, "Columns of B and C per tile: a multiple of the core's BLOCK_OUT = 16.", lo=16)
    tile_k: int = _f(64, "Reduction depth per tile: a multiple of the core's BLOCK_IN = 16.", lo=16)
    resident: str = _resident("acc", "gemm")
    double_buffer: bool = _double(True)

    def extents(self, s):
        return {"m": ("M", s["M"]), "n": ("N", s["N"]), "k": ("K", s["K"])}

    def layout(self, s) -> Layout:
        return layout("gemm", {"m": self.tile_m, "n": self.tile_n, "k": self.tile_k}, self.resident,
                      self.double_buffer, s)

    def plan(self, s) -> FpgaPlan:
        return FpgaPlan("gemm", (("m", self.tile_m), ("n", self.tile_n), ("k", self.tile_k)), self.resident,
                        self.double_buffer, DEFAULT.block_in, DEFAULT.block_out, self.layout(s))

    def problems(self, s) -> list[str]:
        return _problems(self, s, (("tile_n", "N", s["N"], DEFAULT.block_out, "BLOCK_OUT"),
                                   ("tile_k", "K", s["K"], DEFAULT.block_in, "BLOCK_IN")),
                         ("tile_m", "M", s["M"]))

    def fitted(self, s):
        k = replace(self, tile_m=max(1, min(self.tile_m, s["M"])),
                    tile_n=max(DEFAULT.block_out, min(self.tile_n, _up(s["N"], DEFAULT.block_out))),
                    tile_k=max(DEFAULT.block_in, min(self.tile_k, _up(s["K"], DEFAULT.block_in))))
        return _shrink(k, s, (("tile_k", DEFAULT.block_in), ("tile_n", DEFAULT.block_out), ("tile_m", 1)))


@dataclass(frozen=True)
class Conv1dFpga:
    tile: int = _f(256, "Outputs per tile: a multiple of the core's BLOCK_OUT = 16 (one core operation "
                        "computes 16 neighbouring outputs).", lo=16)
    tile_k: int = _f(64, "Kernel taps per tile: a multiple of the core's BLOCK_IN = 16. The input buffer "
                         "holds a signal window of tile + tile_k - 1 samples.", lo=16)
    resident: str = _resident("acc", "conv1d")
    double_buffer: bool = _double(True)

    def extents(self, s):
        return {"": ("M+N-1", s["M"] + s["N"] - 1), "k": ("N", s["N"])}

    def layout(self, s) -> Layout:
        return layout("conv1d", {"i": self.tile, "k": self.tile_k}, self.resident, self.double_buffer, s)

    def plan(self, s) -> FpgaPlan:
        return FpgaPlan("conv1d", (("i", self.tile), ("k", self.tile_k)), self.resident, self.double_buffer,
                        DEFAULT.block_in, DEFAULT.block_out, self.layout(s))

    def problems(self, s) -> list[str]:
        L, N = s["M"] + s["N"] - 1, s["N"]
        out = _problems(self, s, (("tile", "M+N-1", L, DEFAULT.block_out, "BLOCK_OUT"),
                                  ("tile_k", "N", N, DEFAULT.block_in, "BLOCK_IN")), None)
        if not out and N % self.tile_k and self.tile_k < N:
            # A partial last kernel tile puts a predicate on the tap loop; TVM 0.27 then sizes the signal
            # window (read at i + k) for every output tile instead of one, or fails (divide by zero).
            ok = [d for d in range(DEFAULT.block_in, N, DEFAULT.block_in) if N % d == 0]
            out.append(f"tile_k={self.tile_k} leaves a partial last kernel tile (N={N} is not a multiple of "
                       f"{self.tile_k}), which TVM 0.27 cannot compact around on this target; use a tile_k that "
                       f"{'divides N (' + ', '.join(map(str, ok[-3:])) + ') or ' if ok else ''}covers N "
                       f"({_up(N, DEFAULT.block_in)}).")
        return out

    def fitted(self, s):
        L, N = s["M"] + s["N"] - 1, s["N"]
        tk = max(DEFAULT.block_in, min(self.tile_k, _up(N, DEFAULT.block_in)))
        if N % tk and tk < N:
            tk = next((d for d in range(tk, 0, -DEFAULT.block_in) if N % d == 0), _up(N, DEFAULT.block_in))
        k = replace(self, tile=max(DEFAULT.block_out, min(self.tile, _up(L, DEFAULT.block_out))), tile_k=tk)
        if _overflows(k, s) and k.resident != "acc":       # the whole kernel does not fit the weight buffer
            k = replace(k, resident="acc")
        k = _shrink(k, s, (("tile", DEFAULT.block_out),))
        while _overflows(k, s) and k.tile_k > DEFAULT.block_in and N % DEFAULT.block_in == 0:
            k = replace(k, tile_k=next(d for d in range(k.tile_k - DEFAULT.block_in, 0, -DEFAULT.block_in)
                                       if N % d == 0))      # smaller tap tiles that still divide N
        if _overflows(k, s) and k.double_buffer:            # a long kernel that is no multiple of 16
            k = replace(k, double_buffer=False)
        return k


def _problems(k, s, blocked, rows) -> list[str]:
    out = []
    if k.resident not in RESIDENT["gemm" if isinstance(k, GemmFpga) else "conv1d"]:
        return out                                  # knobs.validate already named the bad choice
    for name, label, n, b, bname in blocked:
        v = getattr(k, name)
        if v % b:
            out.append(f"{name}={v} is not a multiple of the GEMM core's {bname}={b}; use {max(b, v // b * b)} "
                       f"or {_up(v, b)}.")
        elif v > _up(n, b):
            out.append(f"{name}={v} is larger than {label}={n} rounded up to the core's {b} ({_up(n, b)}); "
                       f"use at most {_up(n, b)}.")
    if rows:
        name, label, n = rows
        if getattr(k, name) > n:
            out.append(f"{name}={getattr(k, name)} is larger than {label}={n}; use at most {n}.")
    if out:
        return out
    lay = k.layout(s)
    return [_overflow_sentence(k, scope, floats, scope in lay.doubled) for scope, floats in lay.floats
            if floats > DEFAULT.capacity(scope)]


_WHAT = {INP: "input buffer", WGT: "weight buffer", ACC: "accumulator"}


def _overflow_sentence(k, scope: str, floats: int, db: bool) -> str:
    cap = DEFAULT.capacity(scope)
    if isinstance(k, GemmFpga):
        fix = {INP: "lower tile_m or tile_k", WGT: "lower tile_k or tile_n",
               ACC: "lower tile_m or tile_n" + (", or keep the output tile resident (resident=acc)"
                                                if k.resident != "acc" else "")}[scope]
    else:
        fix = {INP: "lower tile or tile_k", ACC: "lower tile",
               WGT: "lower tile_k" if k.resident == "acc" else "stream the kernel in tiles (resident=acc)"}[scope]
    return (f"The {_WHAT[scope]} would hold {floats:,} floats ({floats * FLOAT / 1024:.1f} KiB"
            f"{', two copies for double buffering' if db else ''}), {(floats - cap) * FLOAT / 1024:.1f} KiB over "
            f"its {cap * FLOAT // 1024} KiB; {fix}{', or turn off double_buffer' if db else ''}.")


def _overflows(k, s) -> bool:
    return any(f > DEFAULT.capacity(scope) for scope, f in k.layout(s).floats)


def _shrink(k, s, order):
    """Halve tiles (in `order`, down to their block) until every buffer fits: how a preset adapts to a shape."""
    for _ in range(64):
        if not _overflows(k, s):
            return k
        for name, lo in order:
            v = getattr(k, name)
            if v > lo:
                k = replace(k, **{name: max(lo, v // 2 // lo * lo)})
                break
        else:
            return k
    return k


KNOBS = {("gemm", "fpga"): GemmFpga, ("conv1d", "fpga"): Conv1dFpga}

# baseline = one core operation per tile, nothing overlapped (the plain mapping); naive = larger output
# tiles, still single-buffered; seed = VTA's tutorial blocking (output-stationary tiles, double buffered);
# best = the fewest simulated cycles in a sweep of tiles x resident with double buffering (gemm at 512^3:
# 256 x 128 x 16 fills the input buffer's two slots and the accumulator exactly and needs the least DRAM
# traffic, 919,552 cycles against 926,720 for 128 x 256; conv1d at M = N = 1024: 9,441 cycles).
PRESETS = {
    ("gemm", "fpga"): {
        "baseline": dict(tile_m=1, tile_n=16, tile_k=16, resident="acc", double_buffer=False),
        "naive": dict(tile_m=16, tile_n=16, tile_k=16, resident="acc", double_buffer=False),
        "seed": dict(tile_m=16, tile_n=64, tile_k=64, resident="acc", double_buffer=True),
        "best": dict(tile_m=256, tile_n=128, tile_k=16, resident="acc", double_buffer=True),
    },
    ("conv1d", "fpga"): {
        "baseline": dict(tile=16, tile_k=16, resident="acc", double_buffer=False),
        "naive": dict(tile=256, tile_k=16, resident="acc", double_buffer=False),
        "seed": dict(tile=256, tile_k=64, resident="acc", double_buffer=True),
        "best": dict(tile=512, tile_k=256, resident="acc", double_buffer=True),
    },
}
