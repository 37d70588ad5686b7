"""Schedule knobs as frozen dataclasses, the four presets, and validation in plain sentences.

Each operator x target has one knob class with named fields (what the app shows as widgets and the
command line takes as `--knobs k=v,..`). `plan()` turns knobs into the generic plan that
`schedules/` applies, so every operator shares one scheduling engine per target.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from .ops import OPS, Shape
from .ops.conv1d import padded_taps, pads as conv1d_pads

SCOPES = ("global", "shared", "local", "shared+local")
STAGE_CPU = ("global", "inline", "compute_at")     # where a CPU intermediate (padding, depthwise result) lives
ORDERS = ("k_outer", "k_inner", "plain")
SHARED_LIMIT = 48 * 1024
SM_SHARED = 228 * 1024                            # shared memory of one H100/H200 SM, 1 KB of it reserved per block
SM_REGS = 65536
SM_THREADS = 2048
MAX_THREADS = 1024
MAX_REGS = 255                                    # 32-bit registers a CUDA thread can address


def _f(default, help: str, choices=None, lo: int = 1, hi: int = 4096):
    return field(default=default, metadata={"help": help, "choices": choices, "lo": lo, "hi": hi})


def tile(d, axis):
    return _f(d, f"Block tile along {axis}: outputs one thread block (CPU: one cache block) computes.")


def patch(d, axis):
    return _f(d, f"Per-thread output patch along {axis}: each loaded value is reused this many times in registers.")


def split(d, axis="K"):
    return _f(d, f"Reduction split along {axis}: the inner tile; cached operands are loaded once per split.")


def cache(d, t):
    return _f(d, f"Where {t} is read from inside the reduction.", SCOPES)


def cache_out(d):
    return _f(d, "Where the accumulator lives: 'local' keeps the output patch in registers.", ("global", "local"))


def vector(d, choices=(1, 2, 4)):
    return _f(d, "Vector width of the innermost contiguous accesses (float4 = 4).", choices)


def occupancy(d=0):
    return _f(d, "Blocks per SM the compiler must make room for (the minimum of __launch_bounds__): ptxas caps "
                 "each thread's registers at 65536 / (min_blocks x threads), rounded down to 8, so that many blocks "
                 "are resident at once and hide each other's waits; 0 leaves the register count to ptxas.",
              (0, 1, 2, 3, 4, 5, 6, 7, 8), lo=0)


def reg_cap(threads: int, blocks: int) -> int:
    """Registers per thread that let `blocks` blocks of `threads` threads share one SM's register file."""
    return min(MAX_REGS, SM_REGS // (blocks * threads) // 8 * 8)


def unroll(d):
    return _f(d, "Maximum auto-unroll step (0 = no unrolling pragma): a loop is unrolled when its whole body, "
                 "unrolled, is at most this many statements.", (0, 16, 64, 256, 512, 4096), lo=0)


def stage(d, t):
    return _f(d, f"Where the {t} lives: its own global array, inlined into the reader, or computed per tile.", STAGE_CPU)


def order(d):
    return _f(d, "Loop order: k_outer = reduction tile outside the patch loops (cache blocking), "
                 "k_inner = each patch accumulates over the whole reduction, plain = reduction innermost.", ORDERS)


def parallel(d):
    return _f(d, "Run the outer tile loop on all CPU cores.", (False, True))


# ---------------------------------------------------------------- the generic plans
@dataclass(frozen=True)
class Plan:
    """What schedules/ applies: one entry per spatial and reduction loop of the output block."""
    target: str
    tiles: tuple[int, ...]
    patches: tuple[int, ...]
    splits: tuple[int, ...]
    caches: tuple[tuple[str, str], ...]       # (tensor read by the output block, scope or stage)
    cache_out: str = "global"
    vector: int = 1
    unroll: int = 0
    order: str = "k_outer"
    parallel: bool = False
    rthreads: int = 1                         # threads sharing one output's reduction (CUDA)
    pipeline: bool = False                    # fill the next shared tiles while computing on these (CUDA)
    stages: int = 2                           # shared buffers of the pipeline
    async_copy: bool = False                  # pipelined fills by cp.async (global -> shared, no registers)
    interleave: tuple[tuple[str, int, int, int], ...] = ()   # shared tiles stored patch-interleaved:
                                              # (input, its buffer dim, the output axis it follows, group)
    pad_rows: int = 0                         # floats of padding per row of an interleaved (non-inner) dim
    min_blocks: int = 0                       # __launch_bounds__ minimum blocks per SM (0: ptxas chooses)
    group_rows: int = 1                       # block rows launched column by column together (a swizzle)
    one_barrier: bool = False                 # one barrier per reduction tile in a cp.async pipeline
    transposed: tuple[str, ...] = ()          # inputs whose shared tile is stored transposed (GEMM A: [k][m])
    pad: bool = False                         # pad the loops up to whole tiles (pad_einsum) where they do not divide
    kblocks: int = 1                          # blocks sharing one output's reduction, partial sums added after (CUDA)
    separate: tuple[str, ...] = ()            # intermediates computed by a kernel of their own into global memory,
                                              # then cached by the reader like an input (CUDA)
    widths: tuple[tuple[str, int], ...] = ()  # (tensor, floats a copy or store of it moves) where its rows do not
                                              # start on `vector` boundaries: the widest that divides its rows
                                              # (CUDA GEMM: A's rows are K floats, B's and C's N)

    def width(self, tensor: str) -> int:
        """Floats one copy or store of this tensor moves: `vector`, or less where its rows allow less."""
        return dict(self.widths).get(tensor, self.vector)


# rows of a transposed shared tile: a stride of 4 (mod 32) floats (storage_align(factor, offset) in
# schedules/cuda._transpose; GemmCuda.a_row sizes the tile the same way)
TRANSPOSED_ROW = (32, 4)


def _fp(scope: str, shared_tile: int, local_all: int, local_step: int) -> tuple[int, int]:
    """Footprint of one cached input: shared floats per block, register floats per thread.
    'local' holds the thread's whole split in registers; 'shared+local' only one reduction step."""
    return {"global": (0, 0), "shared": (shared_tile, 0), "local": (0, local_all),
            "shared+local": (shared_tile, local_step)}[scope]


def row_pad(row: int, rows: int = 2) -> int:
    """Floats added to each row of an interleaved shared tile, so that the `rows` neighbouring rows a warp reads
    at once start in different 128-bit bank groups (rows stay 16-byte aligned for cp.async): rows of 32 floats
    would all start in bank 0, rows of 16 in banks 0 and 16."""
    for pad in range(0, 32, 4):
        starts = {(row + pad) * i % 32 for i in range(min(rows, 8))}
        if len(starts) == min(rows, 8):
            return pad
    return 0


def warp_rows(k) -> int:
    """Distinct patch rows (output axis 0) the 32 threads of a warp cover."""
    across = k.tile_n // k.patch_n
    return max(1, min(k.tile_m // k.patch_m, 32 // across)) if across < 32 else 1


def _acc(cache_c: str, patch: int) -> int:
    return patch if cache_c == "local" else 0


# ---------------------------------------------------------------- GPU knobs
@dataclass(frozen=True)
class GemmCuda:
    tile_m: int = tile(64, "M")
    tile_n: int = tile(64, "N")
    patch_m: int = patch(4, "M")
    patch_n: int = patch(4, "N")
    k_split: int = split(16)
    cache_a: str = cache("local", "A")
    cache_b: str = cache("local", "B")
    cache_c: str = cache_out("local")
    vector: int = vector(4)
    unroll: int = unroll(0)
    pipeline: bool = _f(False, "Software pipelining: while the threads compute on one k tile in shared memory they "
                               "already load the next one into a second buffer (double buffering).", (False, True))
    stages: int = _f(2, "Shared buffers of the software pipeline: with 3, two k tiles are in flight while the "
                        "threads compute on a third.", (2, 3))
    async_copy: bool = _f(False, "cp.async (sm_80 and later): the pipelined fills copy global memory straight into "
                                 "shared memory without passing through registers, so the threads never wait for "
                                 "the next tile's loads before computing on this one.", (False, True))
    interleave: bool = _f(False, "Store the shared tiles with the threads' patches interleaved: A's rows so that "
                                 "the two patch rows a warp reads at once are neighbours (each row padded by 4 "
                                 "floats for k tiles of 32, so they start in different banks), and B's columns in "
                                 "groups of `vector` when a patch is wider than one vector. A warp's 128-bit shared "
                                 "reads then meet no bank twice. Where a tile does not divide M or N, the last "
                                 "block tile's layout is padded.",
                          (False, True))
    min_blocks: int = occupancy()
    group_m: int = _f(1, "Launch order of the blocks: in groups of group_m block rows, going down each column of "
                         "the group before the next column (a swizzle). The blocks resident at one time then read "
                         "group_m row panels of A and only a few column panels of B, so more of their reads hit "
                         "in L2; 1 = row after row. Must divide the number of block rows.", (1, 2, 4, 8, 16, 32))
    one_barrier: bool = _f(False, "One barrier per k tile instead of two in the cp.async pipeline: each thread "
                                  "waits for its copies of this tile, then one barrier both publishes the tile "
                                  "and tells every thread that the buffer of the previous tile is free, and only "
                                  "then are the next tile's copies issued into it. TVM's pipeline puts a second "
                                  "barrier before those copies. Needs async_copy=true.", (False, True))
    transpose_a: bool = _f(False, "Store A's shared tile transposed, k-major (A_shared[k][m], each k row padded "
                                  "to a stride of 4 mod 32 floats): a thread's patch_m values of one k step are "
                                  "then contiguous (two 128-bit loads for 8), so it keeps only one k step of A in "
                                  "registers instead of four, and the copies into shared memory are 4-byte "
                                  "cp.async (or plain) copies. Needs cache_a='shared' or 'shared+local'.",
                           (False, True))
    pad_tiles: bool = _f(False, "Where tile_m or tile_n does not divide M or N, pad the output up to whole block "
                                "tiles (TVM's pad_einsum): the copies from global read zeros beyond the edges, so "
                                "no register load or multiply-add in the k loop tests bounds and the edge blocks "
                                "run the same code as the others; only those copies and the write-back test "
                                "bounds. Without it every register load and multiply-add of a thread whose patch "
                                "could cross an edge is guarded. K is not padded: where k_split does not divide K, "
                                "the tests stay on the last k tile's copies (padding K too was 3% slower at "
                                "1024x1024x1000). Needs cache_c='local'.", (False, True))
    k_blocks: int = _f(1, "Split K across thread blocks (split-K): k_blocks blocks work on each output tile, each "
                          "on K / k_blocks of the reduction, and write their partial sums to a global workspace "
                          "of k_blocks x M x N floats; a second kernel adds them up. Where M x N alone gives too "
                          "few blocks to fill the SMs (a long K: 512x512x8192 is 64 tiles of 64x64 for 132 SMs), "
                          "this multiplies the blocks. Where it does not divide K, each block sums ceil(K / "
                          "k_blocks) values and the last block fewer (its copies of the last k tile test bounds).",
                     (1, 2, 4, 8, 16, 32))

    def a_row(self) -> int:
        """Floats per row of A's shared tile: k_split (+ interleave padding), or with transpose_a the padded
        tile_m (a stride of 4 mod 32: neighbouring k rows start 4 banks apart)."""
        if self.transpose_a:
            factor, offset = TRANSPOSED_ROW
            return self.tile_m + (offset - self.tile_m) % factor
        return self.k_split + (row_pad(self.k_split, warp_rows(self)) if self.interleaved()[:1] == (("A", 0, 0, 1),)
                               else 0)

    def interleaved(self) -> tuple[tuple[str, int, int, int], ...]:
        """The shared tiles `interleave` rearranges: (input, buffer dim, output axis, group of contiguous)."""
        if not self.interleave:
            return ()
        # with one thread along an axis there are no patches to interleave (and TVM cannot map that layout)
        out = [("A", 0, 0, 1)] if "shared" in self.cache_a and self.tile_m > self.patch_m and not self.transpose_a \
            else []
        if "shared" in self.cache_b and self.patch_n > self.vector and self.patch_n % self.vector == 0 \
                and self.tile_n > self.patch_n:
            out.append(("B", 1, 1, self.vector))
        return tuple(out)

    def extents(self, s: Shape):
        return {"m": ("M", s["M"]), "n": ("N", s["N"]), "k": ("K", s["K"])}

    def footprint(self, s: Shape) -> tuple[int, int]:
        """(floats in shared memory per block, floats in registers per thread)."""
        rows = self.k_split if self.transpose_a else self.tile_m
        a = _fp(self.cache_a, rows * self.a_row(), self.patch_m * self.k_split, self.patch_m)
        b = _fp(self.cache_b, self.k_split * self.tile_n, self.k_split * self.patch_n, self.patch_n)
        buffers = self.stages if self.pipeline else 1   # pipelining keeps `stages` copies of the shared tiles
        return buffers * (a[0] + b[0]), a[1] + b[1] + _acc(self.cache_c, self.patch_m * self.patch_n)

    def plan(self, s: Shape) -> Plan:
        return Plan("cuda", (self.tile_m, self.tile_n), (self.patch_m, self.patch_n), (self.k_split,),
                    (("A", self.cache_a), ("B", self.cache_b)), self.cache_c, self.vector, self.unroll,
                    pipeline=self.pipeline, stages=self.stages, async_copy=self.async_copy,
                    interleave=self.interleaved(), pad_rows=row_pad(self.k_split, warp_rows(self)),
                    min_blocks=self.min_blocks, group_rows=self.group_m, one_barrier=self.one_barrier,
                    transposed=("A",) if self.transpose_a and "shared" in self.cache_a else (),
                    pad=self.pad_tiles, kblocks=self.k_blocks,
                    widths=tuple((t, _largest_divisor(row, self.vector)) for t, row in
                                 (("A", s["K"]), ("B", s["N"]), ("C", s["N"])) if self.vector > 1 and row % self.vector))


@dataclass(frozen=True)
class Conv1dCuda:
    tile: int = tile(256, "the output")
    patch: int = patch(4, "the output")
    k_split: int = split(64, "N")
    cache_a: str = cache("local", "the padded signal A_pad")
    cache_w: str = cache("local", "the kernel W")
    cache_c: str = cache_out("local")
    vector: int = vector(1)
    unroll: int = unroll(0)
    k_threads: int = _f(1, "Threads sharing one output's reduction: each sums N / k_threads products and the "
                           "partial sums meet in shared memory (for few outputs and a long kernel).",
                        (1, 2, 4, 8, 16, 32))
    min_blocks: int = occupancy()
    pad_tiles: bool = _f(False, "Where the tile does not divide the M+N-1 outputs, pad the output up to whole "
                                "tiles, and the taps up to whole k tiles where that adds at most N/8 zero taps "
                                "(the operator's padded definition: TVM's pad_einsum cannot pad A_pad[i + k]): the "
                                "copies read zeros beyond the ends, so no multiply-add tests bounds; only the "
                                "copies and the write-back do. Needs cache_c='local' and k_threads=1.",
                         (False, True))

    def extents(self, s: Shape):
        return {"": ("M+N-1", s["M"] + s["N"] - 1), "k": ("N", s["N"])}

    def footprint(self, s: Shape) -> tuple[int, int]:
        if self.k_threads > 1:
            return self.tile * self.k_threads, 1
        a = _fp(self.cache_a, self.tile + self.k_split - 1, self.patch + self.k_split - 1, self.patch)
        w = _fp(self.cache_w, self.k_split, self.k_split, 1)
        return a[0] + w[0], a[1] + w[1] + _acc(self.cache_c, self.patch)

    def plan(self, s: Shape) -> Plan:
        return Plan("cuda", (self.tile,), (self.patch,), (self.k_split,),
                    (("A_pad", self.cache_a), ("W", self.cache_w)), self.cache_c, self.vector, self.unroll,
                    rthreads=self.k_threads, min_blocks=self.min_blocks, pad=self.pad_tiles)


@dataclass(frozen=True)
class DwconvCuda:
    tile_h: int = tile(16, "H")
    tile_w: int = tile(32, "W")
    patch_h: int = patch(2, "H")
    patch_w: int = patch(2, "W")
    cache_x: str = cache("local", "the padded input X_pad")
    cache_w: str = cache("local", "the kernel W")
    cache_c: str = cache_out("local")
    vector: int = vector(1)
    unroll: int = unroll(0)

    def extents(self, s: Shape):
        return {"h": ("H", s["H"]), "w": ("W", s["W"])}

    def footprint(self, s: Shape) -> tuple[int, int]:
        K = s["K"]
        x = _fp(self.cache_x, (self.tile_h + K - 1) * (self.tile_w + K - 1),
                (self.patch_h + K - 1) * (self.patch_w + K - 1), self.patch_w)
        w = _fp(self.cache_w, K * K, K * K, 1)
        return x[0] + w[0], x[1] + w[1] + _acc(self.cache_c, self.patch_h * self.patch_w)

    def plan(self, s: Shape) -> Plan:
        return Plan("cuda", (1, 1, self.tile_h, self.tile_w), (1, 1, self.patch_h, self.patch_w), (s["K"], s["K"]),
                    (("X_pad", self.cache_x), ("W", self.cache_w)), self.cache_c, self.vector, self.unroll)


@dataclass(frozen=True)
class DwsepCuda:
    tile_b: int = tile(1, "B (images)")
    tile_f: int = tile(8, "F")
    tile_h: int = tile(8, "H")
    tile_w: int = tile(32, "W")
    patch_b: int = patch(1, "B (images)")
    patch_f: int = patch(4, "F")
    patch_h: int = patch(1, "H")
    patch_w: int = patch(2, "W")
    c_split: int = split(8, "C")
    d_kernel: bool = _f(False, "Compute the depthwise result D once, in a kernel of its own (one thread per "
                               "element, its K x K sum in a register), into a global array; the pointwise kernel "
                               "then reads D's tiles the way a GEMM reads an operand, from where cache_d says "
                               "(global, staged in shared, or in registers). Without it, cache_d=global runs D as "
                               "a naive kernel that adds each product into global memory, and with cache_d shared "
                               "or local every block computes the D values of its own pixels: a pixel tile's D is "
                               "computed again by each of the F / tile_f blocks that share it, but D never goes "
                               "to global memory.", (False, True))
    cache_d: str = cache("shared", "the depthwise result D")
    cache_p: str = cache("local", "the pointwise weights P")
    cache_c: str = cache_out("local")
    vector: int = vector(1)
    unroll: int = unroll(0)

    def extents(self, s: Shape):
        return {"b": ("B", s["B"]), "f": ("F", s["F"]), "h": ("H", s["H"]), "w": ("W", s["W"]), "c": ("C", s["C"])}

    def footprint(self, s: Shape) -> tuple[int, int]:
        pix, ppix = self.tile_b * self.tile_h * self.tile_w, self.patch_b * self.patch_h * self.patch_w
        d = _fp(self.cache_d, self.c_split * pix, self.c_split * ppix, ppix)
        p = _fp(self.cache_p, self.tile_f * self.c_split, self.patch_f * self.c_split, self.patch_f)
        return d[0] + p[0], d[1] + p[1] + _acc(self.cache_c, self.patch_f * ppix)

    def plan(self, s: Shape) -> Plan:
        return Plan("cuda", (self.tile_b, self.tile_f, self.tile_h, self.tile_w),
                    (self.patch_b, self.patch_f, self.patch_h, self.patch_w),
                    (self.c_split,), (("D", self.cache_d), ("P", self.cache_p)), self.cache_c, self.vector, self.unroll,
                    separate=("D",) if self.d_kernel else ())


# ---------------------------------------------------------------- CPU knobs
@dataclass(frozen=True)
class GemmCpu:
    tile_m: int = tile(64, "M")
    tile_n: int = tile(64, "N")
    patch_m: int = patch(4, "M")
    patch_n: int = patch(32, "N")
    k_split: int = split(256)
    order: str = order("k_outer")
    cache_b: str = _f("global", "'packed' copies each K x tile_n panel of B contiguously before use.", ("global", "packed"))
    cache_c: str = cache_out("local")
    vector: int = vector(16, (1, 4, 8, 16))
    parallel: bool = parallel(True)
    unroll: int = unroll(0)
    pad_tiles: bool = _f(False, "Where tile_m or tile_n does not divide M or N, pad the output up to whole tiles "
                                "(TVM's pad_einsum), and K up to whole k_split tiles: every register patch is then "
                                "whole and every k tile full, so the vector loop has no lane that tests bounds and "
                                "no remainder falls back to scalar code. A and B are "
                                "copied once into zero-padded arrays (B into its packed panels, with "
                                "cache_b=packed) and the real outputs are copied from the padded C at the end.",
                         (False, True))

    def extents(self, s: Shape):
        return {"m": ("M", s["M"]), "n": ("N", s["N"]), "k": ("K", s["K"])}

    def plan(self, s: Shape) -> Plan:
        return Plan("cpu", (self.tile_m, self.tile_n), (self.patch_m, self.patch_n), (self.k_split,),
                    (("B", self.cache_b),), self.cache_c, self.vector, self.unroll, self.order, self.parallel,
                    pad=self.pad_tiles)


@dataclass(frozen=True)
class Conv1dCpu:
    tile: int = tile(256, "the output")
    patch: int = patch(16, "the output")
    k_split: int = split(1024, "N")
    order: str = order("k_outer")
    pad: str = stage("compute_at", "padded signal A_pad")
    cache_c: str = cache_out("local")
    vector: int = vector(16, (1, 4, 8, 16))
    parallel: bool = parallel(True)
    unroll: int = unroll(0)

    def extents(self, s: Shape):
        return {"": ("M+N-1", s["M"] + s["N"] - 1), "k": ("N", s["N"])}

    def plan(self, s: Shape) -> Plan:
        return Plan("cpu", (self.tile,), (self.patch,), (self.k_split,), (("A_pad", self.pad),),
                    self.cache_c, self.vector, self.unroll, self.order, self.parallel)


@dataclass(frozen=True)
class DwconvCpu:
    tile_h: int = tile(8, "H")
    tile_w: int = tile(64, "W")
    patch_h: int = patch(1, "H")
    patch_w: int = patch(16, "W")
    order: str = order("k_outer")
    pad: str = stage("compute_at", "padded input X_pad")
    cache_c: str = cache_out("local")
    vector: int = vector(16, (1, 4, 8, 16))
    parallel: bool = parallel(True)
    unroll: int = unroll(0)

    def extents(self, s: Shape):
        return {"h": ("H", s["H"]), "w": ("W", s["W"])}

    def plan(self, s: Shape) -> Plan:
        return Plan("cpu", (1, 1, self.tile_h, self.tile_w), (1, 1, self.patch_h, self.patch_w), (s["K"], s["K"]),
                    (("X_pad", self.pad),), self.cache_c, self.vector, self.unroll, self.order, self.parallel)


@dataclass(frozen=True)
class DwsepCpu:
    tile_f: int = tile(16, "F")
    tile_h: int = tile(4, "H")
    tile_w: int = tile(64, "W")
    patch_f: int = patch(4, "F")
    patch_h: int = patch(1, "H")
    patch_w: int = patch(16, "W")
    c_split: int = split(64, "C")
    order: str = order("k_outer")
    d: str = _f("compute_at", "Where the depthwise result D (and the padding X_pad it reads) lives: its own "
                              "global array, recomputed for every output (inline), or computed per tile inside "
                              "the pointwise loop nest.", STAGE_CPU)
    cache_c: str = cache_out("local")
    vector: int = vector(16, (1, 4, 8, 16))
    parallel: bool = parallel(True)
    unroll: int = unroll(0)

    def extents(self, s: Shape):
        return {"f": ("F", s["F"]), "h": ("H", s["H"]), "w": ("W", s["W"]), "c": ("C", s["C"])}

    def plan(self, s: Shape) -> Plan:
        return Plan("cpu", (1, self.tile_f, self.tile_h, self.tile_w), (1, self.patch_f, self.patch_h, self.patch_w),
                    (self.c_split,), (("X_pad", self.d), ("D", self.d)), self.cache_c, self.vector, self.unroll,
                    self.order, self.parallel)


KNOBS: dict[tuple[str, str], type] = {
    ("gemm", "cuda"): GemmCuda, ("conv1d", "cuda"): Conv1dCuda,
    ("dwconv2d", "cuda"): DwconvCuda, ("dwsep_conv2d", "cuda"): DwsepCuda,
    ("gemm", "cpu"): GemmCpu, ("conv1d", "cpu"): Conv1dCpu,
    ("dwconv2d", "cpu"): DwconvCpu, ("dwsep_conv2d", "cpu"): DwsepCpu,
}


# ---------------------------------------------------------------- presets
BIG = 1 << 30        # "the whole axis": fit() clamps it to the extent

PRESETS: dict[tuple[str, str], dict[str, dict]] = {
    ("gemm", "cuda"): {
        "baseline": dict(tile_m=1, tile_n=1, patch_m=1, patch_n=1, k_split=BIG, cache_a="global", cache_b="global",
                         cache_c="global", vector=1),
        "naive": dict(tile_m=16, tile_n=16, patch_m=1, patch_n=1, k_split=BIG, cache_a="global", cache_b="global",
                      cache_c="global", vector=1),
        "seed": dict(tile_m=64, tile_n=64, patch_m=4, patch_n=4, k_split=16, cache_a="local", cache_b="local",
                     cache_c="local", vector=4),
        # best (H200), each step read off the access pattern, no autotuner:
        # - 128x128 outputs per block, 256 threads; one thread owns an 8x8 patch (64 accumulators in registers):
        #   per k step it loads 8 values of A and 8 of B and does 64 multiply-adds (an 8x4 patch: 32 per 12).
        # - A and B are staged in shared memory in k tiles of 16: every value staged is read by the 16 threads
        #   of its patch row (A) or column (B), which is what earns the barrier its keep here.
        # - A's tile is stored transposed, A_shared[k][m] (transpose_a): a thread's 8 values of A for one k step
        #   are then two 128-bit loads, so it holds one k step of A in registers at a time. Stored [m][k] (as the
        #   8x4 schedule below keeps it) nvcc merges 4 k steps of each row into one 128-bit load and holds 32
        #   values of A at once, which with 8x8 patches leaves it no registers to load the next k step while
        #   multiplying (129-167 registers, 3.4-3.9 ms). The copies of A into the transposed tile are 4-byte
        #   cp.async copies (k is contiguous in global memory, m in shared); each k row is padded to 132 floats
        #   so the 16 copies of one column land in different banks.
        # - B's tile stores each thread's 8 columns as two groups of 4, 64 apart (interleave): the 16 threads
        #   along n read 256 contiguous bytes per 128-bit load. Contiguous 8-column patches meet every bank twice
        #   (268M bank conflicts, 40% of the shared wavefronts; 3.14 instead of 2.91 ms).
        # - the fills are cp.async copies (LDGSTS: global memory straight into shared memory, no register in
        #   between) over two buffers: the copy of tile k+1 is in flight while the threads compute on tile k.
        # - one barrier per k tile (one_barrier): each thread waits for its own copies of tile k, one barrier
        #   then publishes tile k and proves every thread is done with tile k-1, and only then are tile k+1's
        #   copies issued into tile k-1's buffer. TVM's pipeline has a second barrier before those copies.
        # - unroll=4096 unrolls the whole k tile: nvcc then loads each k step's fragments of A and B while the
        #   multiply-adds of the step before run (1152 instructions per k tile, 11% not multiply-adds: the mix of
        #   cuBLAS's own loop; both read from SASS built here, NVRTC 13.5 and cuBLAS 13.10's wheel).
        # Measured (data/h200_kmajor.json, run 29 of bench/plans/h200_kmajor.toml): 2.91 ms at 4096^3, 0.926x cuBLAS, against
        # 2.98 for the 8x4 schedule (BEST_FEW_OUTPUTS's); Nsight Compute: 127 registers, 2 blocks per SM, warps
        # stalled at dispatch 0.45 cycles per instruction instead of 0.83, 19K bank conflicts. The table's run
        # (run 30, bench/plans/h200_bench.toml, data/h200_bench.json): 2.911 ms, 0.924x; ten alternating rounds with the 8x4
        # tiles and cuBLAS (data/h200_gemm_transpose_a.json): 0.930x median (0.883-0.938), faster in all ten.
        # Where the busiest of the 132 SMs would take longer with these blocks (gemm_big_tiles_slower) the 8x4
        # schedule of BEST_FEW_OUTPUTS wins, and best takes it: at 1024^3 (64 blocks) 0.102 ms against 0.052, at
        # 2560^3 and 3072^3 (4 and 5 blocks on the busiest SM) 0.94 and 1.41 against 0.77 and 1.27.
        # Tried: k tiles of 8 (3.07), 64x128 or 128x64 tiles (3.04, 2.99), 64x64 tiles of 8x8 (3.08), the same
        # tiles without B interleaved (3.16) or with two barriers (3.23 without interleave, against 3.16),
        # 128 outputs per thread as cuBLAS's kernel has (8x16 or 16x8 patches on 128x128, 128x256 or 256x128
        # tiles: 3.00-3.35 ms, run 32 of bench/plans/h200_kmajor.toml; 201-213 registers built here), 3 stages (over the 48 KB of static
        # shared memory per block).
        # - where 128 does not divide M or N, the output is padded to whole tiles (pad_tiles): the copies from
        #   global read zeros beyond the edges, and no register load or multiply-add tests bounds. Guarded, each
        #   of the 64 multiply-adds of a k step sat under its own test (2400 tests in the CUDA at 4000^3): 3.18
        #   ms at 4000^3, padded 3.07 (1.035x; 1.056x at 2000^3, 1.062x at 4000x6000x1000; run 35 of bench/plans/h200_pad_tiles.toml,
        #   36, data/h200_pad_tiles.json). B stays interleaved there: the layout pads the last tile (before, the
        #   edge dropped interleave, 3.84 ms at 4000^3, run 34 of bench/plans/h200_pad_tiles.toml).
        "best": dict(tile_m=128, tile_n=128, patch_m=8, patch_n=8, k_split=16, cache_a="shared+local",
                     cache_b="shared+local", cache_c="local", vector=4, unroll=4096, pipeline=True,
                     async_copy=True, one_barrier=True, interleave=True, transpose_a=True, pad_tiles=True),
    },
    ("conv1d", "cuda"): {
        "baseline": dict(tile=1, patch=1, k_split=BIG, cache_a="global", cache_w="global", cache_c="global"),
        "naive": dict(tile=256, patch=1, k_split=BIG, cache_a="global", cache_w="global", cache_c="global"),
        "seed": dict(tile=256, patch=4, k_split=32, cache_a="local", cache_w="local", cache_c="local"),
        # best (H200, long signals):
        # - 1024 outputs per block, 128 threads, 8 per thread: each thread copies its window of the signal
        #   (8 + 128 - 1 values) into registers once per k tile of 128 taps, so every signal value feeds up to
        #   8 outputs without another load, and neighbouring threads need no barrier between them.
        # - the 128 taps are staged once per block in shared memory: every thread reads the same tap at the same
        #   time, so one 128-bit broadcast load serves 4 taps to the whole warp (from registers: 128 global
        #   loads per thread per tile).
        # - unroll=4096 unrolls the tile: 1024 multiply-adds per 135 signal loads and 32 shared loads.
        # Measured 21.9x cuDNN at 2^20 x 1024 (0.166 ms, 12.9 TFLOP/s); 4 outputs per thread with taps in registers
        # was 19.5x, 16 per thread 16x (165 registers, fewer blocks per SM), taps from shared with tiles of 64 21.3x.
        # For few outputs (M + N - 1 < 16384) see BEST_FEW_OUTPUTS: 32 threads share each output instead.
        "best": dict(tile=1024, patch=8, k_split=128, cache_a="local", cache_w="shared", cache_c="local",
                     unroll=4096),
    },
    ("dwconv2d", "cuda"): {
        "baseline": dict(tile_h=1, tile_w=1, patch_h=1, patch_w=1, cache_x="global", cache_w="global", cache_c="global"),
        "naive": dict(tile_h=8, tile_w=32, patch_h=1, patch_w=1, cache_x="global", cache_w="global", cache_c="global"),
        "seed": dict(tile_h=16, tile_w=32, patch_h=2, patch_w=2, cache_x="local", cache_w="local", cache_c="local"),
        # best (H200, large batches): memory-bound, so the goal is reading each input once. A thread owns a
        # 4x4 output patch and keeps its 6x6 input window and the 3x3 taps in registers (36 loads for 144
        # multiply-adds instead of 9 per output); a 16x128 block keeps rows contiguous for coalesced loads
        # and stores float4 results. Measured 3.9 TB/s, 94% of the device-to-device copy rate.
        "best": dict(tile_h=16, tile_w=128, patch_h=4, patch_w=4, cache_x="local", cache_w="local", cache_c="local",
                     vector=4),
    },
    ("dwsep_conv2d", "cuda"): {
        "baseline": dict(tile_f=1, tile_h=1, tile_w=1, patch_f=1, patch_h=1, patch_w=1, c_split=BIG,
                         cache_d="global", cache_p="global", cache_c="global"),
        "naive": dict(tile_f=1, tile_h=8, tile_w=32, patch_f=1, patch_h=1, patch_w=1, c_split=BIG,
                      cache_d="global", cache_p="global", cache_c="global"),
        "seed": dict(tile_f=8, tile_h=8, tile_w=32, patch_f=4, patch_h=1, patch_w=2, c_split=8,
                     cache_d="local", cache_p="local", cache_c="local"),
        # best (H200): every one of the 64 output channels of a pixel tile in one block, so the depthwise
        # result D of that tile is computed once, into shared memory, and never goes to global memory
        # (compute_at into the pointwise loop nest). 8 input channels per stage; a thread owns 16 output
        # channels x 2 pixels, reusing each D value 16 times and each pointwise weight twice from registers.
        "best": dict(tile_f=64, tile_h=2, tile_w=32, patch_f=16, patch_h=1, patch_w=2, c_split=8,
                     cache_d="shared", cache_p="local", cache_c="local"),
    },
    # CPU: baseline = the plain loop nest, intermediates materialized, one core; naive = the same nest with the
    # intermediates inlined and the outer loop parallel; seed = split and reordered so the innermost loop walks
    # contiguous memory, intermediates computed at the consumer (one core); best = register patches, all cores.
    ("gemm", "cpu"): {
        "baseline": dict(tile_m=1, tile_n=1, patch_m=1, patch_n=1, k_split=BIG, order="plain", cache_c="global",
                         vector=1, parallel=False),
        "naive": dict(tile_m=1, tile_n=1, patch_m=1, patch_n=1, k_split=BIG, order="plain", cache_c="global",
                      vector=1, parallel=True),
        "seed": dict(tile_m=64, tile_n=64, patch_m=4, patch_n=16, k_split=64, order="k_outer", cache_c="local",
                     vector=16, parallel=False),
        # pad_tiles where the tiles or k tiles do not divide M, N or K: a remainder inside the register patch
        # scalarizes the vector loop (178x671x217: 8.06 ms -> 0.38 ms) and a k remainder halves the speed
        # (1152x448x384, k_split 256 -> 192: 4.10 -> 1.88 ms); measured on the 2-core CPU on 2026-12-05. The
        # held-out suite before (GEMM 3/16) and after (11/20): data/cpu_suite.json and its git history.
        # order=k_inner, unroll=256: each 4x64 patch sums all of K in its 16 vector registers before it is written;
        # faster than k_outer in 7 of 7 alternating rounds at each of 9 shapes, 1.01-1.34x (data/cpu_gemm_order.json)
        "best": dict(tile_m=64, tile_n=64, patch_m=4, patch_n=64, k_split=256, order="k_inner", cache_b="packed",
                     cache_c="local", vector=16, parallel=True, unroll=256, pad_tiles=True),
    },
    ("conv1d", "cpu"): {
        "baseline": dict(tile=1, patch=1, k_split=BIG, order="plain", pad="global", cache_c="global", vector=1,
                         parallel=False),
        "naive": dict(tile=1, patch=1, k_split=BIG, order="plain", pad="inline", cache_c="global", vector=1,
                      parallel=True),
        "seed": dict(tile=256, patch=16, k_split=BIG, order="k_outer", pad="compute_at", cache_c="local", vector=16,
                     parallel=False),
        "best": dict(tile=512, patch=128, k_split=BIG, order="k_inner", pad="compute_at", cache_c="global",
                     vector=16, parallel=True),
    },
    ("dwconv2d", "cpu"): {
        "baseline": dict(tile_h=1, tile_w=1, patch_h=1, patch_w=1, order="plain", pad="global", cache_c="global",
                         vector=1, parallel=False),
        "naive": dict(tile_h=1, tile_w=1, patch_h=1, patch_w=1, order="plain", pad="inline", cache_c="global",
                      vector=1, parallel=True),
        "seed": dict(tile_h=8, tile_w=64, patch_h=1, patch_w=16, order="k_outer", pad="compute_at", cache_c="local",
                     vector=16, parallel=False),
        "best": dict(tile_h=16, tile_w=128, patch_h=4, patch_w=32, order="k_inner", pad="compute_at",
                     cache_c="global", vector=16, parallel=True),
    },
    ("dwsep_conv2d", "cpu"): {
        "baseline": dict(tile_f=1, tile_h=1, tile_w=1, patch_f=1, patch_h=1, patch_w=1, c_split=BIG, order="plain",
                         d="global", cache_c="global", vector=1, parallel=False),
        "naive": dict(tile_f=1, tile_h=1, tile_w=1, patch_f=1, patch_h=1, patch_w=1, c_split=BIG, order="plain",
                      d="inline", cache_c="global", vector=1, parallel=True),
        "seed": dict(tile_f=16, tile_h=4, tile_w=64, patch_f=4, patch_h=1, patch_w=16, c_split=BIG, order="k_outer",
                     d="compute_at", cache_c="local", vector=16, parallel=False),
        "best": dict(tile_f=64, tile_h=4, tile_w=128, patch_f=8, patch_h=1, patch_w=32, c_split=BIG, order="k_inner",
                     d="compute_at", cache_c="global", vector=16, parallel=True),
    },
}
# fpga target (kernels/fpga): a VTA-style accelerator, simulated; its knob classes and presets live there.
from .fpga.knobs import KNOBS as _FPGA_KNOBS, PRESETS as _FPGA_PRESETS  # noqa: E402
KNOBS.update(_FPGA_KNOBS)
PRESETS.update(_FPGA_PRESETS)
PRESET_NAMES = ("baseline", "naive", "seed", "best")
# Below a size, another measured schedule wins (data/h200_bench.json): with few outputs and a long
# reduction, threads share each output's reduction; a small depthwise image wants smaller blocks.
FEW_OUTPUTS = 16384
H200_SMS = 132
# ms per 4096 of K that one SM spends on best's GEMM blocks (data/h200_kmajor.json): a 128x128 block of 8x8 shares
# its SM with one other (2.911 ms at 4096^3 for 8 blocks per SM), a 64x64 block of 8x4 with four others (2.980 ms
# for 32 per SM), and a 128x128 block alone on its SM (1024^3: 64 blocks, 0.102 ms for K=1024) runs 1.8x faster
# than a pair, not 2x.
GEMM_SM_MS = {128: 2.911 / 8, 64: 2.980 / 32}
GEMM_ALONE_MS = {128: 0.102 * 4, 64: 0.0}


def gemm_big_tiles_slower(s: Shape) -> bool:
    """Whether best's 128x128 GEMM tiles would take at least as long as the 64x64 tiles of 8x4 at this M, N (K
    scales both alike). The block scheduler deals the blocks out to the H200's 132 SMs, so the SM with the most
    blocks, ceil(blocks / 132), sets the time: its blocks share it, and a lone 128x128 block cannot use all of it.
    Fitted at 4096^3 and 1024^3, it names the faster tiling at 14 of the 18 shapes measured with both (1024 to
    6144 cubed, 4000x6000x1000, 10000x1024x1024 both ways); the four it misses were within 3.8% (3584^3, 6144^3,
    1024x10000x1024, 10000x1024x1024: short K, which it leaves out). The rule before it (the 128x128 tiles
    wherever their last wave of 264 was at least 90% full) missed five, by up to 8.9% (4000x6000x1000) and 7%
    (2816^3; runs 39 and 41 of bench/plans/h200_kmajor.toml, 42 of h200_gemm_tile_rule.toml)."""
    def sm_ms(tile: int) -> float:
        blocks = -(-s["M"] // tile) * -(-s["N"] // tile)
        return max(-(-blocks // H200_SMS) * GEMM_SM_MS[tile], GEMM_ALONE_MS[tile])
    return sm_ms(128) >= sm_ms(64)


# Split-K for best's 64x64 GEMM blocks of 8x4 (data/h200_anchors.json step 3, 512x512x8192: k_blocks 1, 2, 4, 8,
# 16 took 0.223, 0.117, 0.104, 0.103, 0.104 ms): an SM's blocks share it, so it takes (its blocks) x (K per
# block) x GEMM_SPLIT_MS_PER_K, 12% more when a block has its SM alone; the partial sums cost a second launch
# and k_blocks + 1 passes over M x N floats. The same constants give 1024^3 (256 blocks, 2 per SM) 0.050 ms:
# measured 0.052.
GEMM_SPLIT_MS_PER_K = 0.223 / 8192 / 1.12
GEMM_SPLIT_ALONE = 1.12
GEMM_SPLIT_LAUNCH_MS = 0.002
GEMM_SPLIT_BYTES_PER_MS = 3.0e9
# At least one k tile of 32 per block. The first floor, 8 tiles (fitted on 512x512x8192 alone), kept best 15-17%
# from the fastest k_blocks at 2 of the 6 shapes of data/h100_gemm_few_tiles.json; the second, 4 tiles, kept it
# from the most blocks where few output tiles and a K of a few thousand want them all (H100, judged on the held-out
# suite and data/h100_gemm_ragged_splitk.json, 2026-12-06): 64x64x875 got 4 blocks and 0.64x cuBLAS where 16 ran
# at 1.06x, 192x192x1000 4 and 0.75x where 8 ran at 1.07x, 100x300x3001 16 and 1.07x where 32 ran at 1.22x
# (and 1.07x, 1.13x, 1.22x again in data/h100_gemm_splitk_spills.json). With one tile the model picks the
# fastest or within 2% of it at 9 of the 10 shapes of data/h100_gemm_ragged_splitk.json (79x3659x5888: 16
# blocks, 0.99 of the fastest).
GEMM_SPLIT_MIN_K = 32


def gemm_split_ms(s: Shape, k_blocks: int, tile: int = 64) -> float:
    """The model's time for best's 64x64 blocks with K split over k_blocks blocks (see above)."""
    blocks = -(-s["M"] // tile) * -(-s["N"] // tile) * k_blocks
    per_sm = -(-blocks // H200_SMS)
    ms = per_sm * s["K"] / k_blocks * GEMM_SPLIT_MS_PER_K * (GEMM_SPLIT_ALONE if per_sm == 1 else 1.0)
    if k_blocks > 1:
        ms += GEMM_SPLIT_LAUNCH_MS + (k_blocks + 1) * s["M"] * s["N"] * 4 / GEMM_SPLIT_BYTES_PER_MS
    return ms


def gemm_k_blocks(s: Shape) -> int:
    """The k_blocks the model finds fastest, the fewer of two within 2%: each block sums a ceil(K / k_blocks)
    share of K, at least GEMM_SPLIT_MIN_K of it, and the last block gets some (k_blocks need not divide K: at
    64x64x875 no power of two does, and unsplit it ran at 0.28x cuBLAS, data/h100_suite.json)."""
    ok = [kb for kb in (1, 2, 4, 8, 16, 32)
          if kb == 1 or (-(-s["K"] // kb) >= GEMM_SPLIT_MIN_K and _every_block_sums(s["K"], kb))]
    fastest = min(gemm_split_ms(s, kb) for kb in ok)
    return min(kb for kb in ok if gemm_split_ms(s, kb) <= 1.02 * fastest)


@functools.lru_cache(maxsize=512)
def _spills(op: str, shape: tuple, k) -> bool | None:
    """Whether the pinned compiler's cubin for these knobs keeps anything in local memory (kernels.sass reads the
    frame size off the cubin); None where it cannot tell (no NVIDIA wheels, or the compiler refused the kernel)."""
    from . import build
    from .sass.toolchain import ToolchainError, compile_cubin, local_bytes
    try:
        return local_bytes(compile_cubin(build.source(op, dict(shape), k, "cuda", "cuda"))) > 0
    except (ToolchainError, KnobError, ValueError, RuntimeError):
        return None


def gemm_split_unspilled(k, s: Shape):
    """best's split-K GEMM with 3 shared stages where its cubin spills with 2. With k_blocks=32 and the whole k loop
    unrolled, ptxas spills at some long ragged K and not at its neighbours (64x166x7396: a 1312-byte frame, 618
    STL; K=7390 or 8180: none), so the machine's view asks the compiler (about 2 s, then cached on disk). On an
    H100 (data/h100_gemm_splitk_spills.json) the spilling picks ran at 0.12x-0.28x cuBLAS at four shapes, with
    3 stages at 0.75x-0.94x (unroll 256: 0.50x-0.73x; half the k_blocks: 0.24x-0.54x); where nothing spilled, 3
    stages cost 1% to 8%, so they are taken only where the cubin spills."""
    if _spills("gemm", tuple(s.items()), k) and not _spills("gemm", tuple(s.items()), replace(k, stages=3)):
        return replace(k, stages=3)
    return k


# The one shape where best's fused depthwise-separable kernel was measured level with d_kernel (the benchmark's)
DWSEP_FUSED_LEVEL = {"B": 32, "C": 64, "H": 128, "W": 128, "K": 3, "F": 64}


def dwsep_fused_loses(s: Shape) -> bool:
    """Whether best's fused depthwise-separable kernel (D computed per block into shared memory, 64 output
    channels a block) loses to computing D once in its own kernel and the pointwise as a GEMM (d_kernel).
    Measured at nine shapes on an H100 (data/h100_dwsep_dkernel.json), the fused kernel tied (2.02x cuDNN
    both) only at the benchmark's 32x64x128x128 with F=64 (one block of 64 output channels, so D is computed
    once there too) and lost everywhere else by 1.3x to 12x (8x48x112x112, F=96: 0.19x against 1.63x;
    MobileNet's 8x96x56x56, F=128: 0.09x against 1.29x; 1x48x56x56, F=16: 0.07x against 0.89x). Three rules
    that kept it on more shapes were each judged wrong by the next held-out batch: F <= 64 on maps of at least
    64x64 (data/h100_dwsep_suite.json: F=24 and 32 at 112x112, best 0.12x and 0.18x cuDNN, the tuner 0.65x and
    0.81x); F = 64 there (data/h100_suite_6.json: 8x192x112x112, best 0.14x, tuned 1.49x); F = 64 and at most
    64 input channels there (data/h100_suite_7.json: 4x48x112x112, K=7, best 0.27x, tuned 1.74x). The fused
    kernel was never the faster anywhere, so it is kept only at the one shape where it was measured level, and
    the H200's benchmark row goes on measuring the kernel it names."""
    return dict(s) != DWSEP_FUSED_LEVEL


# conv1d on CUDA: best pads its tiles whole (pad_tiles, the operator's padded definition) where the kernel has at
# least this many multiply-adds (M x N) and its tiles leave a remainder. Measured on an H100 (fitting data,
# data/h100_conv1d_exact.json, 2026-12-07): best padded against best at the six shapes of step 3, 1.16x-1.53x
# faster at the five of 22.6 to 668 million multiply-adds, 0.86x at 72037x24 (1.7 million, a 4 us kernel: 4.6 us
# against 4.0); in the same plan's fresh draw the tuner's winner was best padded, unchanged otherwise, at 1698879x41
# (1.14x best) and 253952x26 (6.6 million, 1.10x). Not where the k tile divides the taps into two or more whole
# tiles: there best's cubin has no more bounds tests than padded (2^20 x 1024, the benchmark's shape: 1768
# instructions, 1024 multiply-adds, 4 branches unpadded, 2 padded; kernels.sass.mix), and its H200 times stand.
CONV1D_PAD_FROM = 1 << 22


def conv1d_pads_whole(s: Shape, k) -> bool:
    """Whether best's conv1d on CUDA (knobs k, fitted) takes pad_tiles at this shape (where its tiles leave
    nothing over, fit drops it again)."""
    return s["M"] * s["N"] >= CONV1D_PAD_FROM and not (s["N"] > k.k_split and s["N"] % k.k_split == 0)


def dwsep_small_map_many_channels(s: Shape) -> bool:
    """Whether best's d_kernel schedule takes one image's 8x8 pixels a block (DWSEP_SMALL_MAPS) instead of 2x32
    pixels: maps of at most 14x14 with 256 input channels or more, or with B x F of 4096 or more (many images
    and output channels: blocks enough for the small tile). Fitted on the eleven small-map shapes measured on an
    H100 with both tilings or their kin, not yet judged on held-out ones. In data/h100_dwsep_small_maps.json the
    image tile with c tiles of 8 (imgc8) beat best's tiling of then at the five shapes the rule now gives it
    (4x512x7x7, F=64: 0.40x cuDNN against 0.27x; 32x512x7x7, F=144: 0.72x against 0.48x; 16x64x7x7, F=512:
    0.75x against 0.57x; 32x24x14x14, F=384: 0.70x against 0.65x; 1x512x14x14, F=64: level, 0.43x) and lost at
    the three it leaves to 2x32 pixels (2x144x14x14, F=96: 0.62x against 0.81x; 4x128x7x7, F=64: 0.64x against
    0.71x; 2x64x7x7, F=384: 0.85x against 0.91x). In data/h100_dwsep_dkernel.json the 2x32-pixel tile won at
    the two small maps with few channels and B x F under 4096 (4x32x14x14, F=48: 0.84x; 32x16x14x14, F=48:
    0.96x), and four images a block (the rule's tile before, sm32) beat it at both with many channels."""
    return s["H"] * s["W"] <= 14 * 14 and (s["C"] >= 256 or s["B"] * s["F"] >= 4096)


def blocks(op: str, k, shape: dict) -> int:
    """Blocks of a launch: each tiled output axis over its tile, times the outputs of the axes no tile covers
    (a depthwise kernel's images and channels), times the blocks that split a reduction (k_blocks)."""
    n, covered = getattr(k, "k_blocks", 1), 1
    for axis, (_, extent) in k.extents(shape).items():
        t = getattr(k, f"tile_{axis}" if axis else "tile", None)
        if isinstance(t, int):
            n *= -(-extent // t)
            covered *= extent
    return n * max(1, round(_outputs(op, shape) / covered))


# Where best launches fewer blocks than the GPU has SMs, the tiled axes it may spread over more blocks: each step
# halves one tile with its patch (the threads a block keeps, each owning half the outputs), or the tile alone
# where the patch is one output. On the H100's held-out depthwise-separable shapes the lowest were small maps with
# many channels where best launched 4 blocks of 64 threads (1x384x14x14, F=32: 0.48x cuDNN, data/h100_suite_4.json)
# and one halving (8 blocks) was all the variants tried. Measured at the three lowest (data/h100_dwsep_spread.json,
# H100, 2026-12-06, fitting data): the spread with the most blocks won the tuner's 8 trials at all three, 0.48x ->
# 1.13x, 0.46x -> 1.24x, 0.67x -> 0.71x cuDNN, where best alone ran 0.35x, 0.40x, 0.50x. best takes it on the small
# maps with many channels those three are (dwsep_small_map_many_channels); the search tries it wherever blocks are few.
SPREAD = {("dwsep_conv2d", "cuda"): ("w", "h", "f")}


def padded(op: str, target: str, k, shape: dict) -> list:
    """conv1d on CUDA: k with pad_tiles, where its tiles leave a remainder that padding removes (the operator's
    padded definition: at 255347x980 the cubin's branches fall from 274 to 4 for the same 1024 multiply-adds),
    and the same with the k tile whose padding leaves no remainder of taps (padding_k_tile) where that differs,
    then that with the signal window staged in shared memory (MetaSchedule's conv1d kernel staged both; at
    255347x980 the padded cubin's multiply-adds are 57% of its instructions with the window in registers, 83%
    staged); those k does not already have (best pads where conv1d_pads_whole), [] elsewhere. Proposals for
    the tuner, first after best: only their measurement counts."""
    if (op, target) != ("conv1d", "cuda") or k.k_threads > 1 or k.cache_c != "local":
        return []
    ks = list(dict.fromkeys((k.k_split, padding_k_tile(shape["N"], k.k_split))))
    out = [fit(replace(k, pad_tiles=True, k_split=d), shape) for d in ks]
    out.append(fit(replace(k, pad_tiles=True, k_split=ks[-1], cache_a="shared", cache_w="shared"), shape))
    return [p for p in dict.fromkeys(out) if p.pad_tiles and p != k and not validate(op, target, p, shape)]


def padding_k_tile(taps: int, k_split: int) -> int:
    """The k tile for conv1d's padded definition: k_split where it divides the taps or padding them to whole
    k tiles adds at most N/8 (ops.conv1d.padded_taps); else the multiple of 8 from k_split/2 to k_split whose
    whole tiles add the fewest zero taps, within N/8 (782 taps: 112, 784 taps; in tiles of 128 the remainder's
    tests stay: 233 branches in the cubin at 854625x782, 5 with 112)."""
    if taps % k_split == 0 or padded_taps(taps, k_split) > taps:
        return k_split
    fits = [d for d in range(max(8, k_split // 2), k_split + 1, 8)
            if taps % d == 0 or padded_taps(taps, d) > taps]
    return max(fits, key=lambda d: (-(-(-taps // d) * d - taps), d)) if fits else k_split


def exact_tiles(op: str, target: str, k, shape: dict) -> list:
    """conv1d on CUDA: settings near k whose tiles no bounds test cuts: an output tile (patch x threads)
    dividing M+N-1 and a k tile dividing N. Where a tile leaves a remainder, every multiply-add of the tile
    sits under a bounds test and the signal window cannot stay in registers across them: at 255347x980 best's
    cubin has 274 branches and 347 shared loads for 1024 multiply-adds, which are 34% of its instructions.
    Dividing tiles (as MetaSchedule's perfect tilings always are; its conv1d kernel there ran 2.5x faster than
    ours, data/h100_suite_9.json) leave 2 to 4 branches, and the multiply-adds' share grows with the patch:
    714 outputs of 6 a thread and 140 taps, 56% with the window in registers, 78% staged in shared memory with
    the taps; 14 a thread, 70% and 87%. So: the largest patch (up to 16) that divides, window in registers,
    then the same staged in shared memory, then the dividing tile nearest k's. Where no output tile divides (a
    prime count of outputs), only the k tile is made to divide; no proposal launches fewer blocks than best
    (or than one per SM). Proposals for the tuner: only their measurement counts, and none has been measured
    yet."""
    from math import log
    if (op, target) != ("conv1d", "cuda") or getattr(k, "k_threads", 1) > 1 or k.cache_a != "local":
        return []           # best's design for many outputs only (a window in registers): below it, best is
                            # a few outputs a block with global operands (BEST_FEW_OUTPUTS)
    outs, taps = shape["M"] + shape["N"] - 1, shape["N"]
    least = min(blocks(op, k, shape), H200_SMS)     # no fewer blocks than best launches, up to one per SM
    # k tiles up to 144: a thread's window (patch + k_split - 1 values, up to 16 + 143) and its 16 sums stay
    # within the 255 registers a thread has, as at best's 8 + 127
    ks = [d for d in range(8, min(taps, 144) + 1) if taps % d == 0]
    k_split = min(ks, key=lambda d: abs(log(d / k.k_split))) if ks else k.k_split

    def near(p, t):         # distance from k's tile and patch, and the idle lanes of a last, partial warp
        warps = -(-t // 32)
        return abs(log(p * t / k.tile)) + abs(log(p / k.patch)) + 2 * (warps * 32 - t) / (warps * 32)
    fits = [(p, t) for p in range(2, 17) for t in range(32, 1025) if outs % (p * t) == 0 and outs // (p * t) >= least]
    picks = [max(fits, key=lambda pt: (pt[0], -near(*pt))), min(fits, key=lambda pt: near(*pt))] if fits else \
        [(k.patch, k.tile // k.patch)]
    out = []
    for i, (p, t) in enumerate(picks):
        local = replace(k, tile=p * t, patch=p, k_split=k_split)
        out += [local, replace(local, cache_a="shared", cache_w="shared")] if i == 0 and fits else [local]
    out = [fit(x, shape) for x in out]     # a padded k's pad_tiles goes where the tiles now leave nothing over
    return [x for x in dict.fromkeys(out) if x != k and not validate(op, target, x, shape)]


def spread(op: str, target: str, k, shape: dict, steps: int = 3) -> list:
    """Up to `steps` settings from k with ever more blocks, the last first: the halving (see SPREAD) of the
    axis with the largest patch, else the largest tile, repeated until the launch has H200_SMS blocks."""
    axes = SPREAD.get((op, target))
    out = []
    while axes and blocks(op, k, shape) < H200_SMS:
        ext, tile = k.extents(shape), {a: getattr(k, f"tile_{a}") for a in axes}
        can = [a for a in axes if tile[a] > 1 and -(-ext[a][1] // (tile[a] // 2)) > -(-ext[a][1] // tile[a])]
        if not can:
            break
        a = max(can, key=lambda a: (getattr(k, f"patch_{a}"), tile[a]))
        t, p = tile[a] // 2, getattr(k, f"patch_{a}")
        try:
            k = fit(replace(k, **{f"tile_{a}": t, f"patch_{a}": min(max(1, p // 2), t)}), shape)
        except (TypeError, ValueError):
            break
        if validate(op, target, k, shape):
            break
        out.append(k)
    return out[::-1][:steps]


# imgc8 of data/h100_dwsep_small_maps.json, over best's d_kernel knobs: one image's 8x8 (7x7) pixels a block, a
# thread a row of 8 (7) pixels and 4 of 32 output channels, c tiles of 8
DWSEP_SMALL_MAPS = dict(tile_b=1, tile_f=32, patch_f=4, tile_h=8, tile_w=8, patch_b=1, patch_h=1, patch_w=8, c_split=8)


# (below: fewer outputs than this, or a rule on the shape; the knobs that win there)
BEST_FEW_OUTPUTS: dict[tuple[str, str], tuple[int | Callable[[Shape], bool], dict]] = {
    # GEMM where best's 128x128 blocks, two per SM of the H200, would keep the busiest SM longer
    # (gemm_big_tiles_slower): 64x64 tiles, 8x4 patches, A stored [m][k], 5 blocks of 128 threads per SM. Each step:
    # - one thread owns an 8x4 patch (32 accumulators): per k step 8 values of A and 4 of B, 32 multiply-adds.
    # - A and B staged in shared memory in k tiles of 32: every value staged is read by 16 (A) or 8 (B) threads.
    # - cp.async fills over two buffers, one barrier per k tile (as best): without one_barrier warps wait at
    #   barriers 0.69 cycles per instruction instead of 0.39; 0.9% faster at 4096^3 (8 of 10 alternating
    #   rounds), 0.3% at 1024^3 (10 of 10; data/h200_gemm_one_barrier.json).
    # - unroll=4096: nvcc merges the 4 consecutive k values of each patch row of A into one 128-bit shared load,
    #   and B's 4 columns into another: 3 shared loads per k step for 32 multiply-adds.
    # Measured: 1.09x cuBLAS at 1024^3 (0.052 ms; median 1.08x over ten rounds, data/h200_gemm_one_barrier.json),
    # 2.98 ms at 4096^3 (best's tiles: 2.91). At 1024^3 the 128x128 tiles make 64 blocks for 132 SMs (0.102 ms).
    # Tried at 1024^3: A transposed (0.065), 8x8 patches of 64x64 tiles (0.068), 128x64 tiles (0.072), in-block
    # split-K (0.0545, data/h200_splitk.json), later copies (0.053-0.054, data/h200_late_copies.json); at
    # 4096^3 (as the best of pass 11): 128x128 tiles of 8x8 with A [m][k] (3.5), k tiles of 16 (3.15) or 8 (3.5),
    # 3 stages (3.08), no cp.async (3.26), min_blocks=6 (3.51), group_m=8 or 16 (L2 hits 64% -> 90%, the same
    # 3.00 ms, so memory is not what bounds it).
    # - pad_tiles where 64 does not divide M or N: the guarded multiply-adds of an edge thread cost far more
    #   than in the 128x128 tiles, 1.7-2.5x (1000^3: 0.36x cuBLAS guarded, 0.90x padded; 3000^3 0.55x -> 1.03x;
    #   10000x1024x1024 0.57x -> 0.99x; data/h200_pad_tiles.json).
    # Where the two cross (runs 33, 39, 41 of bench/plans/h200_kmajor.toml, data/h200_kmajor.json; 42, data/h200_gemm_tile_rule.json):
    # 2048^3 0.375 ms for best's tiles against 0.380; 2560^3 0.941 against 0.766; 2816^3 1.036 against 0.968;
    # 3840^3 2.441 against 2.483; 4000^3 3.096 against 2.962; 4096^3 2.91 against 2.98; 6144^3 9.92 against
    # 10.06; 10000x1024x1024 0.502 against 0.483. Neither tiling wins at every size.
    ("gemm", "cuda"): (gemm_big_tiles_slower, dict(
        tile_m=64, tile_n=64, patch_m=8, patch_n=4, k_split=32, cache_a="shared+local", cache_b="shared+local",
        cache_c="local", vector=4, unroll=4096, pipeline=True, async_copy=True, one_barrier=True, pad_tiles=True)),
    ("conv1d", "cuda"): (16384, dict(tile=8, patch=1, k_threads=32, cache_a="global", cache_w="global",
                                     cache_c="global", unroll=512)),
    ("dwconv2d", "cuda"): (1 << 20, dict(tile_h=16, tile_w=32, patch_h=2, patch_w=2, cache_x="local",
                                         cache_w="local", cache_c="local")),
    # Depthwise-separable where the fused kernel loses (dwsep_fused_loses): D computed once, by a kernel of its
    # own (one thread per element, its K x K sum in a register), and the pointwise as a GEMM over pixels x output
    # channels: 32 channels x 2x32 pixels a block, a thread 4 channels x 4 pixels (16 accumulators), c tiles of
    # 16 of D and P staged in shared memory and read through registers. The variant g32 of
    # data/h100_dwsep_dkernel.json: the fastest of eight at 5 of 9 shapes and within 5% of it at one more; it
    # lost to 2 or 4 images of 7x7 pixels a block (sm64/sm32) at 7x7 and 14x14 maps with 384 and 512 channels
    # (0.36x and 0.61x cuDNN against 0.48x and 0.78x); on small maps best now takes one image a block
    # (dwsep_small_map_many_channels, data/h100_dwsep_small_maps.json).
    ("dwsep_conv2d", "cuda"): (dwsep_fused_loses, dict(
        d_kernel=True, tile_b=1, tile_f=32, patch_f=4, tile_h=2, tile_w=32, patch_b=1, patch_h=1, patch_w=4,
        c_split=16, cache_d="shared+local", cache_p="shared+local", cache_c="local", vector=4, unroll=512)),
}


class KnobError(ValueError):
    """Bad input: one plain sentence per problem, each naming the fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(" ".join(problems))


def knob_class(op: str, target: str) -> type:
    if op not in OPS:
        raise KnobError([f"Unknown operator '{op}'; choose one of {', '.join(OPS)}."])
    if (op, target) not in KNOBS:
        targets = sorted({t for (o, t) in KNOBS if o == op})
        raise KnobError([f"Unknown target '{target}'; choose one of {', '.join(targets)}."])
    return KNOBS[(op, target)]



def fit(k, s: Shape):
    """Clamp a preset to a shape: tiles and splits no larger than their axes, patches dividing tiles,
    the widest vector that the shape allows."""
    if hasattr(k, "fitted"):            # fpga knobs: tiles in units of the GEMM core's block (kernels/fpga)
        return k.fitted(s)
    ext = k.extents(s)
    ch = {}
    for x, (_, n) in ext.items():
        t, p = (f"tile_{x}", f"patch_{x}") if x else ("tile", "patch")
        if hasattr(k, t):
            pv = min(getattr(k, p), n)
            tv = min(getattr(k, t), max(pv, n // pv * pv))
            ch[t], ch[p] = tv // pv * pv, pv
        if hasattr(k, f"{x}_split"):
            ch[f"{x}_split"] = min(getattr(k, f"{x}_split"), n)
    k = replace(k, **ch)
    if getattr(k, "async_copy", False) and _threads(k) == 1:      # a one-thread block copies in a loop
        k = replace(k, async_copy=False)
        if getattr(k, "one_barrier", False):                      # nothing left for it to merge
            k = replace(k, one_barrier=False)
    if getattr(k, "interleave", False) and _interleave_problem(k, s):
        k = replace(k, interleave=False)
    if getattr(k, "pad_tiles", False) and isinstance(k, GemmCpu) and k.k_split > 0:
        k = _balanced_cpu_tiles(k, s)
    if isinstance(k, Conv1dCuda) and k.pad_tiles and not (k.tile > 0 and conv1d_pads(s, k.tile, k.k_split)):
        k = replace(k, pad_tiles=False)                                             # nothing to pad
    if (getattr(k, "pad_tiles", False) and not isinstance(k, Conv1dCuda) and k.tile_m > 0 and k.tile_n > 0
            and not (s["M"] % k.tile_m or s["N"] % k.tile_n)                    # nothing to pad
            and not (isinstance(k, GemmCpu) and k.k_split > 0 and s["K"] % k.k_split)):
        k = replace(k, pad_tiles=False)
    if getattr(k, "k_threads", 1) > 1:
        k = replace(k, k_threads=_largest_divisor(s["N"], k.k_threads))
    if getattr(k, "k_blocks", 1) > 1:
        kb = _k_blocks_that_fit(s["K"], k.k_blocks)
        k = replace(k, k_blocks=kb, k_split=min(k.k_split, -(-s["K"] // kb)))
    if getattr(k, "group_m", 1) > 1 and k.tile_m > 0:
        k = replace(k, group_m=1 if k.interleaved() else _largest_divisor(_block_rows(k, s), k.group_m))
    if hasattr(k, "vector"):
        choices = [v for v in fields_of(k)["vector"].metadata["choices"] if v <= k.vector]
        for v in sorted(choices, reverse=True):
            cand = replace(k, vector=v)
            if not _vector_problems(cand, s):
                return cand
    return k


def _balanced_cpu_tiles(k: "GemmCpu", s: Shape) -> "GemmCpu":
    """CPU GEMM with pad_tiles: as many tiles along M, N and K as the knobs ask for, but of equal size (in whole
    patches of M, whole vectors of N), so the padding stays under one patch or vector per tile. N=95 in tiles
    of 64 padded to 128 (0.225 ms at 327x95x382); two tiles of 48 pad to 96 (0.142 ms). Along K, where up to
    twice as many k tiles would divide K exactly, they do: padding K alone makes the kernel copy A and B into
    padded arrays. Measured at seven shapes, alternately in one process (data/cpu_gemm_k_tiles.json): k tiles
    that divide K were faster at all seven, in every round, 1.06x to 2.13x (1088x64x1128: five k tiles of 226,
    padded to 1130, 1.64 ms; six of 188, nothing padded and nothing copied, 0.77 ms)."""
    tiles = -(-s["K"] // k.k_split)
    exact = next((t for t in range(tiles, 2 * tiles + 1) if s["K"] % t == 0), None)
    ch = {"k_split": s["K"] // exact if exact else -(-s["K"] // tiles)}
    for x, unit in (("m", k.patch_m), ("n", k.vector)):
        n, t = s[x.upper()], getattr(k, f"tile_{x}")
        if unit < 1 or t < unit or n <= t or n % t == 0:
            continue
        per = -(-n // -(-n // t))                       # tiles of equal size ...
        ch[f"tile_{x}"] = -(-per // unit) * unit        # ... in whole units
    k = replace(k, **ch)
    if k.tile_n % k.patch_n and k.vector > 0 and k.tile_n % k.vector == 0:
        # the widest patch of whole vectors that divides the new tile, up to 1.5x the one asked for
        k = replace(k, patch_n=max(p for p in range(k.vector, k.tile_n + 1, k.vector)
                                   if k.tile_n % p == 0 and 2 * p <= 3 * k.patch_n))
    return k


def _interleave_problem(k, s: Shape) -> str | None:
    """Why `interleave` cannot apply to these GEMM knobs and shape (None if it can)."""
    tiles = k.interleaved()
    if not tiles:
        return ("interleave=true rearranges the shared tiles, and none is rearranged here: set cache_a to "
                "'shared' or 'shared+local' with tile_m larger than patch_m (or cache B in shared with patch_n "
                "wider than vector and tile_n larger than patch_n), or interleave=false.")
    return None


def _block_rows(k, s: Shape) -> int:
    """Block tiles along M (the last one partial where tile_m does not divide M)."""
    return -(-s["M"] // k.tile_m)


def _threads(k) -> int:
    """Threads of a CUDA block: tile / patch on each output axis."""
    out = 1
    for x in k.extents({d: 1 for d in "MNKBCHWF"}):
        t, p = (f"tile_{x}", f"patch_{x}") if x else ("tile", "patch")
        if hasattr(k, t):
            out *= getattr(k, t) // getattr(k, p)
    return out


def has_remainder(k, s: Shape) -> bool:
    """Whether some tile or split does not divide its axis (the schedule then carries predicates)."""
    for x, (_, n) in k.extents(s).items():
        for f in ((f"tile_{x}" if x else "tile"), f"{x}_split"):
            if hasattr(k, f) and n % getattr(k, f):
                return True
    return False


def fields_of(k) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in fields(k)}


def few_outputs(op: str, target: str, s: Shape) -> bool:
    """Whether best takes its BEST_FEW_OUTPUTS knobs at this shape."""
    if (op, target) not in BEST_FEW_OUTPUTS:
        return False
    below = BEST_FEW_OUTPUTS[(op, target)][0]
    return below(s) if callable(below) else _outputs(op, s) < below


def preset(op: str, target: str, name: str, s: Shape):
    cls = knob_class(op, target)
    if name not in PRESET_NAMES:
        raise KnobError([f"Unknown preset '{name}'; choose one of {', '.join(PRESET_NAMES)}."])
    table = PRESETS[(op, target)]
    if name == "best" and few_outputs(op, target, s):
        k = cls(**BEST_FEW_OUTPUTS[(op, target)][1])
        if (op, target) == ("gemm", "cuda"):
            k = replace(k, k_blocks=gemm_k_blocks(s))
            if k.k_blocks > 1:
                k = gemm_split_unspilled(fit(k, s), s)
        if (op, target) == ("dwsep_conv2d", "cuda") and dwsep_small_map_many_channels(s):
            k = replace(k, **DWSEP_SMALL_MAPS)
            k = next(iter(spread(op, target, fit(k, s), s)), k)     # fewer blocks than SMs: spread them
        return fit(k, s)
    k = fit(cls(**table[name]), s)
    if name == "best" and (op, target) == ("conv1d", "cuda") and conv1d_pads_whole(s, k):
        k = fit(replace(k, pad_tiles=True), s)
    return k


def fitted(op: str, target: str, text: str, s: Shape):
    """Knob text applied to the class defaults, then fitted to the shape: how a preset is built."""
    return fit(parse_knobs(op, target, text, knob_class(op, target)()), s)


def _outputs(op: str, s: Shape) -> int:
    out = 1
    for d in OPS[op].output_shape(s):
        out *= d
    return out


def _inner_axis(k) -> tuple[str, str, str]:
    """(patch field, tile field, extent key) of the innermost (contiguous) output axis."""
    x = list(k.extents({d: 1 for d in "MNKBCHWF"}))
    x = [a for a in x if hasattr(k, f"tile_{a}" if a else "tile")][-1]
    return (f"patch_{x}" if x else "patch"), (f"tile_{x}" if x else "tile"), x


def _vector_problems(k, s: Shape) -> list[str]:
    v = getattr(k, "vector", 1)
    if v == 1:
        return []
    p, t, x = _inner_axis(k)
    label, n = k.extents(s)[x]
    out = []
    if getattr(k, p) % v:
        out.append(f"vector={v} needs {p} to be a multiple of {v} (it is {getattr(k, p)}); "
                   f"use vector={_largest_divisor(getattr(k, p), v)} or a wider patch.")
    if isinstance(k, GemmCuda):
        if s["N"] % v and s["K"] % v:
            out.append(f"vector={v} needs K or N divisible by {v} (A's rows are K floats, B's and C's N) so that "
                       f"some rows start on a {4 * v}-byte boundary (K={s['K']}, N={s['N']}); use vector=1.")
    elif "cuda" in type(k).__name__.lower() and n % v:
        out.append(f"vector={v} needs {label} divisible by {v} so every row starts on a {4 * v}-byte boundary "
                   f"({label}={n}); use vector=1.")
    return out


def _every_block_sums(K: int, k_blocks: int) -> bool:
    """Whether each of k_blocks blocks gets some of K, in shares of ceil(K / k_blocks)."""
    return (k_blocks - 1) * -(-K // k_blocks) < K


def _k_blocks_that_fit(K: int, below: int) -> int:
    """The most k_blocks (a power of two, at most `below`) that each get some of K (_every_block_sums)."""
    return max(kb for kb in (1, 2, 4, 8, 16, 32) if kb <= below and _every_block_sums(K, kb))


def _largest_divisor(n: int, below: int) -> int:
    return max(d for d in (1, 2, 4, 8, 16, 32) if d <= below and n % d == 0)


def validate(op: str, target: str, k, s: Shape) -> list[str]:
    """Every violated rule as one sentence naming the problem and the fix; [] when the knobs are valid."""
    out = []
    for f in fields(k):
        v, meta = getattr(k, f.name), f.metadata
        if meta.get("choices") is not None and v not in meta["choices"]:
            out.append(f"{f.name}={v} is not one of {', '.join(map(str, meta['choices']))}; pick one of those.")
        elif isinstance(v, int) and not isinstance(v, bool) and v < meta.get("lo", 1):
            out.append(f"{f.name}={v} must be at least {meta.get('lo', 1)}.")
    if out:
        return out
    if hasattr(k, "problems"):          # fpga knobs: core-block multiples and buffer capacities (kernels/fpga)
        return k.problems(s)
    for x, (label, n) in k.extents(s).items():
        t, p = (f"tile_{x}", f"patch_{x}") if x else ("tile", "patch")
        if hasattr(k, t):
            tv, pv = getattr(k, t), getattr(k, p)
            if tv > n:
                out.append(f"{t}={tv} is larger than {label}={n}; use at most {n}.")
            if pv > tv:
                out.append(f"{p}={pv} is larger than {t}={tv}; a patch must fit inside its tile.")
            elif tv % pv:
                out.append(f"{t}={tv} is not a multiple of {p}={pv}; pick a patch that divides the tile, "
                           f"e.g. {_largest_divisor(tv, pv)}.")
        sp = f"{x}_split"
        if hasattr(k, sp) and getattr(k, sp) > n:
            out.append(f"{sp}={getattr(k, sp)} is larger than {label}={n}; use at most {n}.")
    if out:
        return out
    if target == "cuda":
        threads = _threads(k)
        if getattr(k, "pipeline", False) and "shared" not in (k.cache_a + k.cache_b):
            out.append("pipeline=true overlaps loading the next shared tile with computing on this one; cache A "
                       "or B in 'shared' or 'shared+local', or set pipeline=false.")
        if getattr(k, "async_copy", False) and threads == 1:
            out.append("async_copy=true needs more than one thread per block (with one thread the copy is a "
                       "loop, which cp.async cannot express); use a larger tile or patch 1, or async_copy=false.")
        elif getattr(k, "async_copy", False) and not k.pipeline:
            out.append("async_copy=true copies the next shared tile while computing on this one, which needs the "
                       "software pipeline; set pipeline=true, or async_copy=false.")
        if getattr(k, "one_barrier", False) and not getattr(k, "async_copy", False):
            out.append("one_barrier=true merges the two barriers of the cp.async pipeline, and this schedule has "
                       "none; set pipeline=true and async_copy=true, or one_barrier=false.")
        if getattr(k, "interleave", False) and _interleave_problem(k, s):
            out.append(_interleave_problem(k, s))
        if getattr(k, "transpose_a", False) and "shared" not in k.cache_a:
            out.append(f"transpose_a=true lays out A's shared tile, and cache_a={k.cache_a} keeps none; set cache_a "
                       "to 'shared' or 'shared+local', or transpose_a=false.")
        if getattr(k, "pad_tiles", False) and getattr(k, "k_threads", 1) > 1:
            out.append(f"pad_tiles=true pads the tiles of one thread's reduction, and k_threads={k.k_threads} "
                       "shares each output's reduction among threads; set k_threads=1, or pad_tiles=false.")
        if getattr(k, "pad_tiles", False) and k.cache_c != "local":
            out.append(f"pad_tiles=true accumulates the padded tiles in registers and writes back only the real "
                       f"outputs, and cache_c={k.cache_c} accumulates in global memory; set cache_c=local, or "
                       "pad_tiles=false.")
        group = getattr(k, "group_m", 1)
        rows = _block_rows(k, s) if group > 1 and k.tile_m > 0 else 1
        if group > 1 and rows % group:
            out.append(f"group_m={group} does not divide the {rows} block rows (M={s['M']} in tiles of "
                       f"tile_m={k.tile_m}); use group_m={_largest_divisor(rows, group)}.")
        elif group > 1 and k.interleaved():
            out.append(f"group_m={group} launches the blocks out of row order, and interleave=true lays the "
                       "shared tiles out by row-major block (TVM cannot rewrite that layout under a grouped block "
                       "index); use group_m=1 or interleave=false.")
        kb = getattr(k, "k_blocks", 1)
        share = -(-s["K"] // kb) if kb > 1 else 0
        if kb > 1 and not _every_block_sums(s["K"], kb):
            out.append(f"k_blocks={kb} leaves blocks with no part of K={s['K']} to sum (each takes {share} values); "
                       f"use k_blocks={_k_blocks_that_fit(s['K'], kb)} or fewer.")
        elif kb > 1 and k.k_split > share:
            out.append(f"k_split={k.k_split} is larger than the {share} values of K that each of the "
                       f"k_blocks={kb} blocks sums; use k_split at most {share}, or fewer k_blocks.")
        kt = getattr(k, "k_threads", 1)
        if kt > 1 and (k.patch != 1 or k.cache_a != "global" or k.cache_w != "global"):
            out.append(f"k_threads={kt} splits each output's reduction across threads, which streams operands "
                       "straight from global memory one output per thread group; set patch=1, cache_a=global and "
                       "cache_w=global, or k_threads=1.")
        if kt > 1 and s["N"] % kt:
            out.append(f"k_threads={kt} does not divide N={s['N']}; the split reduction needs a k_threads that "
                       f"divides N, e.g. {_largest_divisor(s['N'], kt)}.")
        threads *= kt
        if threads > MAX_THREADS:
            out.append(f"The block would have {threads} threads (tile / patch on each axis"
                       f"{', times k_threads' if kt > 1 else ''}); CUDA allows at most "
                       f"{MAX_THREADS}, so use a larger patch or a smaller tile.")
        smem, regs = k.footprint(s)
        if smem * 4 > SHARED_LIMIT:
            out.append(f"The shared-memory tiles need {smem * 4 / 1024:.1f} KB per block, over the "
                       f"{SHARED_LIMIT // 1024} KB limit; shrink the tile or the split, or cache less in 'shared'.")
        if regs > MAX_REGS:
            out.append(f"Each thread would hold {regs} floats in registers, over the {MAX_REGS} a CUDA thread can "
                       f"address; lower the split or the patch, or cache in 'shared+local' instead of 'local'.")
        out += _occupancy_problems(k, threads, smem * 4, regs)
    out += _vector_problems(k, s)
    return out


def _occupancy_problems(k, threads: int, smem_bytes: int, regs: int) -> list[str]:
    """min_blocks asks for blocks that must fit on one SM together: threads, shared memory, registers."""
    b = getattr(k, "min_blocks", 0)
    if not b or threads > MAX_THREADS:
        return []
    if b * threads > SM_THREADS:
        return [f"min_blocks={b} asks for {b} blocks of {threads} threads on one SM, over the {SM_THREADS} "
                f"threads an SM holds; use min_blocks={max(1, SM_THREADS // threads)} or less, or 0."]
    if b * (smem_bytes + 1024) > SM_SHARED:
        fit_b = SM_SHARED // (smem_bytes + 1024)
        return [f"min_blocks={b} asks for {b} blocks of {smem_bytes / 1024:.1f} KB of shared memory on one SM, "
                f"over its {SM_SHARED // 1024} KB; use min_blocks={fit_b} or less, or 0."]
    cap = reg_cap(threads, b)
    if cap < regs + 8:
        return [f"min_blocks={b} caps each of the {threads} threads at {cap} registers, and it holds {regs} floats "
                f"in registers besides its addresses, so ptxas would spill to local memory; use a smaller "
                f"min_blocks, a smaller patch, or 0."]
    return []


def parse_knobs(op: str, target: str, text: str, base=None):
    """`tile_m=64,cache_a=shared` -> knobs (starting from `base` or the class defaults)."""
    cls = knob_class(op, target)
    fl = {f.name: f for f in fields(cls)}
    ch, bad = {}, []
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, eq, val = item.partition("=")
        key, val = key.strip(), val.strip()
        if key in fl and not eq:
            d = fl[key].default
            bad.append(f"'{item}' has no value; write it as {key}=value, e.g. "
                       f"{key}={str(d).lower() if isinstance(d, bool) else d}.")
            continue
        if key not in fl:
            bad.append(f"'{item}' is not a knob of {op} on {target}; the knobs are {', '.join(fl)} (as name=value).")
            continue
        default = fl[key].default
        if isinstance(default, bool):
            if val.lower() not in ("true", "false", "1", "0", "yes", "no"):
                bad.append(f"{key} must be true or false, not '{val}'.")
                continue
            ch[key] = val.lower() in ("true", "1", "yes")
        elif isinstance(default, int):
            try:
                ch[key] = int(val)
            except ValueError:
                bad.append(f"{key} must be a whole number, not '{val}'.")
        else:
            ch[key] = val
    if bad:
        raise KnobError(bad)
    return replace(base or cls(), **ch)


def knobs_text(k) -> str:
    return ",".join(f"{f.name}={str(getattr(k, f.name)).lower() if isinstance(getattr(k, f.name), bool) else getattr(k, f.name)}"
                    for f in fields(k))


def parse_shape(op: str, text: str) -> Shape:
    if op not in OPS:
        raise KnobError([f"Unknown operator '{op}'; choose one of {', '.join(OPS)}."])
    dims = OPS[op].dims
    s, bad = {}, []
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        key, eq, val = item.partition("=")
        key = key.strip().upper()
        if not eq or key not in dims:
            bad.append(f"'{item}' is not a dimension of {op}; give {','.join(d + '=..' for d in dims)}.")
            continue
        try:
            s[key] = int(val)
            if s[key] < 1:
                raise ValueError
        except ValueError:
            bad.append(f"{key} must be a positive whole number, not '{val.strip()}'.")
    missing = [d for d in dims if d not in s]
    if missing and not bad:
        bad.append(f"The shape is missing {', '.join(missing)}; {op} needs {','.join(d + '=..' for d in dims)}.")
    if bad:
        raise KnobError(bad)
    shape = {d: s[d] for d in dims}
    rules = OPS[op].shape_rules(shape)
    if rules:
        raise KnobError(rules)
    from .limits import index_problems
    too_big = index_problems(op, shape)
    if too_big:
        raise KnobError(too_big)
    return shape


def resolve(op: str, target: str, s: Shape, preset_name: str | None = None, knobs_text_: str | None = None):
    """Preset and/or knob overrides -> validated knobs; raises KnobError with every problem."""
    base = preset(op, target, preset_name, s) if preset_name else fit(knob_class(op, target)(), s)
    k = parse_knobs(op, target, knobs_text_, base) if knobs_text_ else base
    problems = validate(op, target, k, s)
    if problems:
        raise KnobError(problems)
    return k


def random_valid(op: str, target: str, s: Shape, rng, tries: int = 200, fixed: dict | None = None):
    """A random valid knob setting for the shape (for sweeps and tests); None if none was found. `fixed` knobs
    keep their values: a setting where fitting it to the shape changed one of them is drawn again."""
    cls, fixed = knob_class(op, target), fixed or {}
    for _ in range(tries):
        ch = {}
        for f in fields(cls):
            meta = f.metadata
            if meta.get("choices") is not None:
                ch[f.name] = meta["choices"][rng.integers(len(meta["choices"]))]
            else:
                ch[f.name] = int(2 ** rng.integers(0, 8))
        k = fit(cls(**{**ch, **fixed}), s)
        if not validate(op, target, k, s) and all(getattr(k, n) == v for n, v in fixed.items()):
            return k
    return None
