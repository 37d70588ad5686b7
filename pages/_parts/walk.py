"""The seed's GEMM story as GemmCuda knob sets: the course baseline, the four decisions stacked one at a time,
then the decisions that took the seed's schedule to `best` on the H200.

Each step is the previous one plus the knobs its decision changes, so the counts and times of consecutive steps
isolate that decision. bench/variants.py (CANDIDATES) holds the seed's steps as `walk-1`..`walk-4`; each step past the seed
(BEYOND) names the data file and run that measured exactly its knobs (walk_runs reads them)."""
from __future__ import annotations

from dataclasses import dataclass, fields

import pandas as pd

from kernels import knobs as K
from kernels.ops import OPS

from . import recorded as R
from .walk_runs import Evidence, Source

OP, TARGET = "gemm", "cuda"
SIZES = {"speed test": OPS[OP].sizes["speed test"], "large": OPS[OP].sizes["large"]}


@dataclass(frozen=True)
class Step:
    n: int
    title: str
    short: str         # the label on the step picker
    seed: str          # the seed's words for this decision
    reading: str       # how the decision reads as knobs, and what had to be chosen to make it a kernel
    text: str          # the knobs, as `--knobs` text (k_split=BIG means the whole K axis: no split)
    why: str = ""      # past the seed: the one-sentence reason for the decision
    small_text: str = ""   # knobs where `best` keeps the smaller tiles (kernels.knobs.gemm_big_tiles_slower)
    sources: tuple[Source, ...] = ()      # past the seed: the runs in data/ that timed exactly these knobs
    evidence: tuple[Evidence, ...] = ()   # Nsight Compute counters of the same kernel, where data/ has them

    def text_at(self, shape: dict) -> str:
        return self.small_text if self.small_text and K.gemm_big_tiles_slower(shape) else self.text


BASELINE = Step(0, "The course baseline", "baseline",
                "only the outer output axes bound to blockIdx, one thread per block",
                "The `baseline` preset: a 1x1 tile per block, one thread per block, every operand read from global "
                "memory and the sum kept in global memory.",
                f"tile_m=1,tile_n=1,patch_m=1,patch_n=1,k_split={K.BIG},cache_a=global,cache_b=global,"
                "cache_c=global,vector=1,unroll=0")
STEPS = (
    BASELINE,
    Step(1, "64x64 output tiles bound to blockIdx", "64x64 tiles → blockIdx",
         "tile the output into 64 by 64 blocks and bind those to blockIdx",
         "`tile_m=tile_n=64`. Nothing is split for threads yet, so the honest knob reading is `patch = tile`: one "
         "thread per block computes all 4,096 outputs of its tile. Those 4,096 sums cannot live in registers (a "
         "thread addresses at most 255), so they stay in global memory (`cache_c=global`), as in the baseline.",
         f"tile_m=64,tile_n=64,patch_m=64,patch_n=64,k_split={K.BIG},cache_a=global,cache_b=global,"
         "cache_c=global,vector=1,unroll=0"),
    Step(2, "A 4x4 patch per thread bound to threadIdx", "4x4 patch → threadIdx",
         "split each block again so that one thread owns a 4 by 4 patch of the output rather than a single element, and bind that to threadIdx",
         "`patch_m=patch_n=4`: 16x16 = 256 threads per block, each owning 16 outputs. Owning them means their "
         "sums accumulate in registers (`cache_c=local`, now legal at 16 floats); A and B are still read from "
         "global memory for every multiply.",
         f"tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split={K.BIG},cache_a=global,cache_b=global,"
         "cache_c=local,vector=1,unroll=0"),
    Step(3, "A k-split of 16, operands cached at the split", "k-split 16, cached",
         "split the reduction axis by 16 and compute_at the cached operands there, so each thread pulls its working set once per k tile",
         "`k_split=16` with `cache_a=cache_b=local`: at each k tile a thread copies its 4x16 slice of A and 16x4 "
         "slice of B into registers, the seed's choice of level (the `which level wins` panel below measures the "
         "alternatives).",
         "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,cache_c=local,"
         "vector=1,unroll=0"),
    Step(4, "The inner axis vectorized", "vectorized", "vectorize the innermost axis",
         "`vector=4`: the contiguous innermost loads and stores become float4, four elements per instruction. "
         "These are exactly the `seed` preset's knobs.",
         "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,cache_c=local,"
         "vector=4,unroll=0"),
)

# ---------------------------------------------------------------- from the seed to best (H200)
# Each step names the run in data/ that timed exactly its knobs at both sizes (walk_runs checks the recorded
# knob text); the page reads every number from there. Nsight Compute's counters (data/h200_gemm_stalls.json)
# are named by run, at M=N=K=4096 only.
SEED_SOURCE = (Source("h200_bench.json", "seed"),)     # the seed in the table's run, timed beside cuBLAS
SHARED = "cache_a=shared+local,cache_b=shared+local,cache_c=local,vector=4"
P8X4 = f"tile_m=64,tile_n=64,patch_m=8,patch_n=4,{SHARED},unroll=4096,pipeline=true"
T128 = (f"tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,{SHARED},unroll=4096,pipeline=true,"
        "async_copy=true,one_barrier=true,transpose_a=true")
STALLS = "h200_gemm_stalls.json"
REGS = ("launch__registers_per_thread", "registers per thread")
BARRIER = ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
           "warps waiting at a barrier per issued instruction")
CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "bank conflicts of shared loads")
WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "shared-load wavefronts")
BEYOND = (
    Step(5, "A and B staged in shared memory", "shared memory", "",
         "`cache_a=cache_b=shared+local`: at each k tile the block's threads copy its slice of A and of B into "
         "shared memory together, a barrier makes the copies visible, and each thread then loads one k step of "
         "its patch from shared memory into registers at a time. The seed found registers faster on its course "
         "GPU; on the H200 shared memory wins, as the *which level wins* panel below measures.",
         f"tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,{SHARED},unroll=0",
         why="Every value of A is read by all the threads along its block row and every value of B by all the "
             "threads down its column: staged in shared memory, the block fetches each one from global memory "
             "once per k tile and its threads read it from there, where the seed's registers had every thread "
             "fetch its own copy from global memory.",
         sources=(Source("h200_tuning_1.json", "seed-shared+local"),)),
    Step(6, "The k tile unrolled", "unrolled", "",
         "`unroll=512` (TVM's auto-unroll pragma on the block): in the CUDA TVM generates for this step only the "
         "loop over k tiles is left, where the step before had the k steps, the copies and the patch as nested "
         "loops (`python -m kernels source ... --ir cuda` shows both).",
         f"tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,{SHARED},unroll=512",
         why="Unrolled, the k steps of a tile need no loop counter or branch, and every shared-memory read has "
             "a constant offset, so nvcc can issue the loads of the next k step while the multiply-adds of this "
             "one run.",
         sources=(Source("h200_tuning_1.json", "t64p4k16u"),)),
    Step(7, "An 8x4 patch per thread", "8x4 patch", "",
         "`patch_m=8`: half the threads per block, each owning twice the outputs. `unroll=4096` keeps the larger "
         "k tile unrolled whole: with 512 its k steps stay a loop in the generated CUDA.",
         f"tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,{SHARED},unroll=4096",
         why="An 8x4 patch gives each thread 32 sums and, per k step, 8 values of A and 4 of B for 32 "
             "multiply-adds (the 4x4 patch: 8 values for 16); with A stored [m][k] nvcc loads four k steps of a "
             "patch row in one 128-bit shared load, and the 8x4 patch's register budget holds those merged "
             "values of A beside the 32 sums, where an 8x8 patch's would not (step 12).",
         sources=(Source("h200_bench.json", "g64p8x4k16u"),)),
    Step(8, "Two shared buffers, the next tile loaded early", "double buffer", "",
         "`pipeline=true`: TVM's software pipeline on the k loop, two stages, so the fill of the next buffer "
         "comes before the multiply-adds on the current one.",
         f"{P8X4},k_split=16",
         why="Two shared buffers per operand let tile k+1 be loaded while tile k is multiplied, but without "
             "cp.async the loads still pass through registers: each thread waits for its global loads before it "
             "can store them into shared memory, so little of the copy hides behind the multiply-adds.",
         sources=(Source("h200_bench.json", "g64p8x4k16p"),)),
    Step(9, "cp.async copies", "cp.async", "",
         "`async_copy=true`: each fill becomes `cp.async.cg.shared.global`, the tile's copies are grouped by "
         "`cp.async.commit_group` and waited for with `cp.async.wait_group` (in the CUDA TVM generates).",
         f"{P8X4},k_split=16,async_copy=true",
         why="cp.async copies (LDGSTS in the SASS) go from global memory straight into shared memory with no "
             "register in between, so a thread issues tile k+1's copies, multiplies on tile k, and waits for its "
             "copies only when it needs them.",
         sources=(Source("h200_bench.json", "g64p8x4k16a"),)),
    Step(10, "k tiles of 32", "k tiles of 32", "",
         "`k_split=32`: the two buffers of both 64-wide tiles still fit in a block's shared memory. The times "
         "below are from alternating rounds with cuBLAS, the rounds that also timed step 11.",
         f"{P8X4},k_split=32,async_copy=true",
         why="Half as many k tiles: each tile's barriers and cp.async commit and wait are paid once per 32 k "
             "steps instead of 16.",
         sources=(Source("h200_gemm_one_barrier.json", "best"),),
         evidence=(Evidence(STALLS, "g64p8x4k32a", "2026-12-03T14:34:41Z", (REGS, BARRIER)),)),
    Step(11, "One barrier per k tile", "one barrier", "",
         "`one_barrier=true`: kernels/lowering.merge_barriers rewrites TVM's pipeline loop from [barrier; copies "
         "of tile k+1; commit] [wait; barrier; compute tile k] to [wait; barrier; copies; commit; compute tile k], "
         "in the compiled kernel and in the kernel the simulator walks.",
         f"{P8X4},k_split=32,async_copy=true,one_barrier=true",
         why="TVM's pipeline has two barriers per k tile; with one, each thread waits for its own copies of tile "
             "k, then a single barrier both publishes tile k and proves every thread is done with tile k-1, so "
             "tile k+1's copies can go into tile k-1's buffer right after it.",
         sources=(Source("h200_gemm_one_barrier.json", "best-1b"),),
         evidence=(Evidence(STALLS, "g64p8x4k32a-1b", "2026-12-03T14:34:41Z", (REGS, BARRIER)),)),
    Step(12, "128x128 tiles of 8x8 patches, A stored k-major", "8x8, A k-major", "",
         "128x128 tiles of 8x8 patches make 256 threads per block; k tiles of 16 keep two buffers of both "
         "tiles within the static shared memory a block may have. A's shared tile is stored `A_shared[k][m]` "
         "(`transpose_a`), filled by 4-byte cp.async copies (k runs along global memory, m along the shared "
         "tile), each k row padded so that the copies of one column land in different banks. B's tile is still "
         "stored as it comes: each thread reads 8 contiguous floats of a k row.",
         T128,
         why="An 8x8 patch does 64 multiply-adds per k step for 8 values of A and 8 of B, but with A stored "
             "[m][k] nvcc would hold four k steps of A beside the 64 sums and run out of registers; stored "
             "k-major, one k step of A is two 128-bit loads, so a thread holds one k step of A at a time.",
         sources=(Source("h200_kmajor.json", "km128p8k16", "2026-12-03T16:52:00Z"),),
         evidence=(Evidence(STALLS, "km128p8k16", "2026-12-03T17:13:18Z", (REGS, CONFLICTS, WAVEFRONTS)),)),
    Step(13, "B interleaved", "B interleaved", "",
         "`interleave=true` rearranges the shared tiles with TVM's `transform_layout`: B's columns in groups of "
         "`vector` floats (one 128-bit load), placed half a tile apart.",
         f"{T128},interleave=true",
         why="Stored as it comes, a thread's 8 contiguous columns of B meet every shared-memory bank twice per "
             "128-bit load of a warp; interleaved as two groups of 4 half a tile apart, the threads along n read "
             "one contiguous run per load and meet no bank twice.",
         sources=(Source("h200_kmajor.json", "kmi128p8k16", "2026-12-03T17:19:12Z"),),
         evidence=(Evidence(STALLS, "kmi128p8k16", "2026-12-03T17:19:04Z", (REGS, CONFLICTS, WAVEFRONTS)),)),
    Step(14, "best: the tiling that wins at each size", "best", "",
         "`best` is a preset, not one knob set: `kernels.knobs.preset` picks one of the two tilings per shape by "
         "that rule, so the knobs below change with the *Counts at* size.",
         f"{T128},interleave=true",
         why="The 128x128 tiles pay off only where there are enough of them for every SM: `best` takes them "
             "where the busiest of the H200's SMs would finish its share of the blocks sooner with them than "
             "with the 64x64 tiles of step 11 (`kernels.knobs.gemm_big_tiles_slower`), and those elsewhere.",
         small_text=f"{P8X4},k_split=32,async_copy=true,one_barrier=true",
         sources=(Source("h200_bench.json", "best"),)),
)
ALL = STEPS + BEYOND


def knobs(step: Step, shape: dict):
    """The step's knobs fitted to `shape` (k_split=BIG becomes K), validated: raises KnobError if illegal."""
    k = K.fitted(OP, TARGET, step.text_at(shape), shape)
    problems = K.validate(OP, TARGET, k, shape)
    if problems:
        raise K.KnobError(problems)
    return k


def changed(prev, cur) -> list[str]:
    """`name: old -> new` for every knob that differs between two knob sets."""
    return [f"{f.name}: {getattr(prev, f.name)} → {getattr(cur, f.name)}" for f in fields(cur)
            if getattr(prev, f.name) != getattr(cur, f.name)]


def label(n: int) -> str:
    return f"{n} · {ALL[n].short}"


def shape_words(s: dict) -> str:
    return f"M=N=K={s['M']}" if len(set(s.values())) == 1 else R.shape_text(s)


def step_times(runs: pd.DataFrame) -> pd.DataFrame:
    """Every step at every recorded GEMM shape, per recorded table: the latest run with exactly the step's knobs
    (its `walk-n` run first), or none; and the speed-up over the previous step in the same table."""
    gemm = runs[(runs["op"] == "gemm") & (runs["target"] == "cuda")] if not runs.empty else runs
    rows = []
    for run, g in (gemm.groupby("run", sort=False) if not gemm.empty else []):
        for name, s in SIZES.items():
            if not (g["shape"] == R.shape_text(s)).any():
                continue
            prev = None
            for st_ in STEPS:
                hit = R.find(g, "gemm", s, knobs(st_, s))
                walk = hit[hit["name"] == f"walk-{st_.n}"]
                r = R.latest(walk if not walk.empty else hit)
                ms = None if r is None else float(r["median_ms"])
                rows.append({"step": label(st_.n), "n": st_.n, "device": g["device"].iloc[0], "run": run,
                             "date": g["date"].max(),
                             "shape": shape_words(s), "recorded as": "" if r is None else r["name"],
                             "median_ms": ms, "vs previous step": prev / ms if ms and prev else None})
                prev = ms
    return pd.DataFrame(rows)


def time_sentence(times: pd.DataFrame, n: int) -> str:
    """What the measurements say about step n, generated from the table (the latest run of each device)."""
    if not times.empty:
        times = times[times["date"] == times.groupby("device")["date"].transform("max")]
    mine = times[times["n"] == n] if not times.empty else times
    got = mine[mine["median_ms"].notna()] if not mine.empty else mine
    if got.empty:
        return (f"No GPU run with exactly step {n}'s knobs is recorded yet (data/ holds none); bench/variants.py "
                f"lists them as `walk-{n}` so the next device run records them.")
    out = []
    for _, r in got.iterrows():
        s = f"on the {r['device']} at {r['shape']} step {n} ran in {r['median_ms']:.4g} ms"
        if pd.notna(r["vs previous step"]):
            v = r["vs previous step"]
            s += f", {v:.2f}x faster than step {n - 1}" if v >= 1 else f", {1 / v:.2f}x slower than step {n - 1}"
        elif n > 0:
            s += f" (step {n - 1} has no recorded run to compare with)"
        out.append(s)
    missing = mine[mine["median_ms"].isna()]
    text = "; ".join(out)
    text = text[0].upper() + text[1:] + "."
    if not missing.empty:
        text += " No run is recorded at " + ", ".join(sorted(set(missing["shape"]))) + "."
    return text
