"""The seed's GEMM story as GemmCuda knob sets: the course baseline, then the four decisions stacked one at a time.

Each step is the previous one plus exactly the knobs its decision changes, so the counts and times of
consecutive steps isolate that decision. bench/tuning.py holds the same sets as `walk-1`..`walk-4`."""
from __future__ import annotations

from dataclasses import dataclass, fields

import pandas as pd

from kernels import knobs as K
from kernels.ops import OPS

from . import recorded as R

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


def knobs(step: Step, shape: dict):
    """The step's knobs fitted to `shape` (k_split=BIG becomes K), validated: raises KnobError if illegal."""
    k = K.fitted(OP, TARGET, step.text, shape)
    problems = K.validate(OP, TARGET, k, shape)
    if problems:
        raise K.KnobError(problems)
    return k


def changed(prev, cur) -> list[str]:
    """`name: old -> new` for every knob that differs between two knob sets."""
    return [f"{f.name}: {getattr(prev, f.name)} → {getattr(cur, f.name)}" for f in fields(cur)
            if getattr(prev, f.name) != getattr(cur, f.name)]


def label(n: int) -> str:
    return f"{n} · {STEPS[n].short}"


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
        return (f"No GPU run with exactly step {n}'s knobs is recorded yet (data/ holds none); bench/tuning.py "
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
