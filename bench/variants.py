"""Named kernel variants, and GEMM variants outside the knobs, built and timed on the GPU against the reference
library in one process.

A variant on the command line is NAME or NAME=SPEC. NAME alone is a preset (baseline, naive, seed, best) or an
entry of CANDIDATES below. SPEC is knob text applied over a base (--over: `best`, the best preset at each shape;
`few-outputs`, the knobs best takes below its size rule, for GEMM the 64x64 tiles of 8x4 (BEST_FEW_OUTPUTS);
`defaults`, the knobs' defaults; `fitted`, the defaults with SPEC applied, then clamped to each shape as a preset
is: tiles and patches no larger than their axes, the widest vector the shape allows; an empty SPEC is the base
itself), plus what no knob offers:
    copies_at=F           the next k tile's copies issued F of the way into the tile's compute (kernels.lowering)
    dynamic_shared=true   the shared stages in "shared.dyn" (one extern buffer, up to 227 KB a block, instead of
                          the 48 KB of static shared memory), by switching the schedule engine's scope
    splitk=G              in-block split-K: G warp groups share each block tile, each summing its part of every
                          k tile into its own register patch, the partial tiles added in shared memory; tile_m,
                          tile_n, patch_m, patch_n, k_split and stages are then the split-K schedule's (it lost to
                          best on the H200, data/h200_splitk.json, so no knob offers it)

    python3 -m bench.variants time [--sizes 4096,1024 | --shapes MxNxK,..] [--over best] VARIANT...
    python3 -m bench.variants rounds [--shapes ..] [--rounds 10] [--base VARIANT] [--variant NAME=KNOBS]
    python -m bench.variants source --size 1024 [--over best] VARIANT      the CUDA source, anywhere
    python -m bench.variants list [--op gemm]                               the catalogue
    python -m bench.variants mix --op conv1d --shapes 255347x980 [--over defaults] VARIANT...   the static
        instruction mix of each cubin (kernels.sass.mix), anywhere; with --measured FILE,.. (and one shape) every
        setting those data files timed there, beside its time

`time` times every variant once (7 repeats, median and IQR) after cuBLAS, each verified against float64 first;
`rounds` times the base (best unless --base), the variant and cuBLAS alternately, round after round, so the two
can be compared round by round. Both print one JSON document on stdout (progress on stderr). The plans under
bench/plans name these commands (data/h200_kmajor.json, h200_late_copies, h200_dyn_shared, h200_splitk,
h200_gemm_ratio_spread, h200_gemm_one_barrier, h200_gemm_transpose_a, h200_gemm_tile_rule, h200_pad_tiles).

CANDIDATES: knob sets measured beside the presets on the H200 (`python3 -m bench.h200 table --candidates --only
NAMES`), chosen by reading each schedule's access pattern and the first tuning pass (data/h200_tuning_1.json).
The fastest that verifies became `best` (`python3 -m bench.h200 pick`). Each comment says what it tests.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

CANDIDATES: dict[str, dict[str, str]] = {
    "gemm": {
        # which level wins: the seed's tiles with operands in registers, in shared, or staged through both
        "seed-local": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,vector=4",
        "seed-shared": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared,cache_b=shared,vector=4",
        "seed-shared+local": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared+local,"
                             "cache_b=shared+local,vector=4",
        # pass 1's winner, unrolled: more independent shared loads in flight per barrier interval
        "t64p4k16u": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared+local,"
                     "cache_b=shared+local,vector=4,unroll=512",
        # a longer k tile: half the barriers, 16 KB of shared memory
        "t64p4k32u": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=32,cache_a=shared+local,"
                     "cache_b=shared+local,vector=4,unroll=512",
        # A straight from shared (a broadcast within each half-warp), B through registers
        "t64p4k16sA": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared,cache_b=shared+local,"
                      "vector=4,unroll=512",
        # smaller blocks: 4x as many, so the 1024^3 case fills all 132 SMs
        "t32p2x4k32u": "tile_m=32,tile_n=64,patch_m=2,patch_n=4,k_split=32,cache_a=shared+local,"
                       "cache_b=shared+local,vector=4,unroll=512",
        "t64x32p4x2k32u": "tile_m=64,tile_n=32,patch_m=4,patch_n=2,k_split=32,cache_a=shared+local,"
                          "cache_b=shared+local,vector=2,unroll=512",
        # 8x4 patch: 32 accumulators, each B value reused 8 times
        "t128x64p8x4k16u": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,cache_a=shared+local,"
                           "cache_b=shared+local,vector=4,unroll=512",
        # the Walkthrough page's steps (pages/_parts/walk.py), one decision each, so every step has a time.
        # Exact at M=N=K=1024 (k_split=1024 is "no split" there; at 4096 it is a 4-way split, so the page
        # matches walk-1/walk-2 at 1024 only). walk-1 is one thread per block: slow, about a second per launch.
        "walk-1": "tile_m=64,tile_n=64,patch_m=64,patch_n=64,k_split=1024,cache_a=global,cache_b=global,"
                  "cache_c=global,vector=1",
        "walk-2": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=1024,cache_a=global,cache_b=global,"
                  "cache_c=local,vector=1",
        "walk-3": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,cache_c=local,"
                  "vector=1",
        "walk-4": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=local,cache_b=local,cache_c=local,"
                  "vector=4",
        # pass 3: software pipelining (double-buffered shared tiles) on pass 2's best and its neighbours
        "t64p4k16u-pipe": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,cache_a=shared+local,"
                          "cache_b=shared+local,vector=4,unroll=512,pipeline=true",
        "t64p4k32u-pipe": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=32,cache_a=shared+local,"
                          "cache_b=shared+local,vector=4,unroll=512,pipeline=true",
        "t64p4k8u-pipe": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,"
                         "cache_b=shared+local,vector=4,unroll=512,pipeline=true",
        "t128x64p8x4k16u-pipe": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,cache_a=shared+local,"
                                "cache_b=shared+local,vector=4,unroll=512,pipeline=true",
        "t128p8k8u-pipe": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,cache_a=shared+local,"
                          "cache_b=shared+local,vector=4,unroll=512,pipeline=true",
        # pass 4: the k loop fully unrolled (unroll=4096: nvcc then merges each row's A reads along k into
        # 128-bit shared loads), cp.async fills over 2 or 3 shared buffers (no thread waits for the next
        # tile before computing on this one), and 8x8 / 8x4 patches (64 or 32 multiply-adds per 4 or 3
        # shared loads)
        "g128k8a": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128k8a3": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128k16a": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128k16a3": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128k16p": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128k8u": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128x64k16a": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128x64k16a3": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128k16a": "tile_m=64,tile_n=128,patch_m=4,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64k16a": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64k16a3": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64k32a": "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k16a": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k16a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8k16a": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x32k16a": "tile_m=64,tile_n=32,patch_m=4,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        # pass 5, around pass 4's winner (64x64, 8x4 patches, cp.async): longer k tiles (half the barriers),
        # the plain pipeline, and cuBLAS's own shape here (128x64 tiles of 8x8 patches, k tiles of 8, 3 stages:
        # the kernel name ncu reads off torch.matmul) and its 64x128 mirror (a warp spans 2 patch rows, so
        # A's 128-bit shared loads meet 2 addresses, not 4)
        "g64p8x4k32a": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k16p": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k32p": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k8a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=8,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64p8x4k16u": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128x64p8k8a3": "tile_m=128,tile_n=64,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128p8k8a3": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128p8k16a": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128p8k16a3": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g128x64k32a": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g32x64p4x4k32a": "tile_m=32,tile_n=64,patch_m=4,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x32p8x4k32a": "tile_m=64,tile_n=32,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        # pass 6: pass 5's winner (k tiles of 32) with 3 stages, and 64x128 tiles whose warps span one patch row
        # (A's shared loads become broadcasts)
        "g64p8x4k32a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,stages=3,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128p8x4k32a": "tile_m=64,tile_n=128,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        "g64x128p8x4k16a": "tile_m=64,tile_n=128,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        # pass 7: interleaved shared tiles, on the guess that A's 128-bit shared loads met two rows in one bank
        # (shared memory was ~70% busy). Pass 6's winner interleaved, and 8x8 patches (16 multiply-adds per
        # shared load against 10.7 for 8x4). None was faster; ncu then found no conflicts in pass 6's winner
        # (data/h200_gemm_stalls.json)
        "i64p8x4k32a": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64p8x4k16a": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64p8x4k16a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i128x64k16a": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64x128p8k16a": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64x128p8k16a3": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=16,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64x128p8k8a3": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i128x64p8k16a": "tile_m=128,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i128x64p8k8a3": "tile_m=128,tile_n=64,patch_m=8,patch_n=8,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i128p8k8a": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i128p8k16a": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        # pass 8: Nsight Compute (data/h200_gemm_stalls.json) found no bank conflicts to remove; what holds best
        # back is the share of issue slots that are not multiply-adds (13% in the k loop). 8x8 patches on a 64x64
        # tile: 64 threads and ~120 registers, so 8 blocks (16 warps) still fit on an SM, and 91% of the k
        # loop's instructions are multiply-adds
        "i64p8k16a": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64p8k16a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "i64p8k8a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true",
        "g64p8k8a3": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096",
        # pass 9: launch bounds. best holds 87 registers, so 5 blocks (20 warps) share an SM; min_blocks=6 caps
        # it at 80 (no spills in nvcc 13's report) for 24 warps, each barrier wait covered by one more block. The
        # 8x8 patches lost on registers (129-167: 2-3 warps per scheduler); capped at 128 they keep 4 per scheduler.
        # Measured (run 16, bench/plans/h200_bench.toml): all slower than best at both sizes. min_blocks=6 did give 80 registers
        # and 5.7 warps per scheduler (from 4.8), but 3.51 ms against 3.00: the capped code keeps the FMA pipe
        # busy 61% of the time, not 71% (data/h200_gemm_stalls.json)
        "g64p8x4k32a-mb6": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=6",
        "g64p8x4k16a-mb6": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=6",
        "g64x128p8x4k32a-mb3": "tile_m=64,tile_n=128,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=3",
        "g128x64k32a-mb3": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=3",
        "g64p8k16a-mb8": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=8",
        "g64p8k8a3-mb8": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=8",
        "g64x128p8k16a-mb4": "tile_m=64,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=4",
        "g128p8k8a-mb2": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=8,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,min_blocks=2",
        # pass 10: block launch order. Row by row, the ~660 blocks resident at 4096^3 span 10 block rows and all
        # 64 block columns: each k step they read 64 column panels of B (512 KB) and B as a whole (64 MB) does
        # not fit in L2 (50 MB). Grouped 8 or 16 rows deep they touch 40-80 column panels, about half of B.
        # Measured (run 18, bench/plans/h200_gemm_l2.toml): L2 hits 64% -> 86% (8) and 90% (16), DRAM reads 2.04 -> 0.48 GB, and
        # the same time to 0.1% at both sizes: best is bound by issue slots, not by memory
        "g64p8x4k32a-g4": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=4",
        "g64p8x4k32a-g8": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=8",
        "g64p8x4k32a-g16": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=16",
        "g128x64k32a-g8": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=8",
        # pass 11: barriers. Nsight Compute puts best's warps at a barrier 0.69 cycles per issued instruction
        # against cuBLAS's 0.11 (data/h200_gemm_stalls.json); best's k loop has two barriers per 1024
        # multiply-adds, cuBLAS's one. one_barrier=true merges TVM's two into one (kernels/lowering.merge_barriers).
        # Measured (run 22, bench/plans/h200_bench.toml): best's knobs with it 2.979 ms against 3.001, barrier stalls 0.69 ->
        # 0.39, issue active 81.9 -> 82.4%; every other schedule here slower than that. Ten alternating rounds
        # (bench/plans/h200_gemm_one_barrier.toml): faster in 8 of 10 at 4096^3 and 10 of 10 at 1024^3, so best ships it
        "g64p8x4k32a-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64p8x4k32a3-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64p8x4k16a-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64p8x4k16a3-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=16,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g128x64k32a-1b": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64x128p8x4k32a-1b": "tile_m=64,tile_n=128,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64p8k16a-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        "g64p8x4k8a3-1b": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=8,stages=3,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true",
        # pass 12: A's shared tile transposed (transpose_a). The 8x8 patches of pass 7 stalled on shared loads
        # (short scoreboard 0.4-0.8) at 129-167 registers: A stored [m][k] makes nvcc hold 4 k steps of A at once.
        # Transposed, one k step of 8 values is two 128-bit loads; with B interleaved in groups of 4 the 128x128
        # tiles ran 2.91 ms in run 29 (bench/plans/h200_kmajor.toml, data/h200_kmajor.json), 127 registers
        "t128p8k16a-1b": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true,interleave=true,transpose_a=true",
        "t128p8k16a": "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,interleave=true,transpose_a=true",
        "t128x64p8k16a-1b": "tile_m=128,tile_n=64,patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,one_barrier=true,interleave=true,transpose_a=true",
    },
    "conv1d": {
        "seed-local": "tile=256,patch=4,k_split=32,cache_a=local,cache_w=local",
        "seed-shared": "tile=256,patch=4,k_split=32,cache_a=shared,cache_w=shared",
        # pass 1's two winners at 2^20, and wider register windows
        "t512p2k256s": "tile=512,patch=2,k_split=256,cache_a=shared,cache_w=shared",
        "t512p4k64l": "tile=512,patch=4,k_split=64,cache_a=local,cache_w=local,unroll=512",
        "t256p8k32l": "tile=256,patch=8,k_split=32,cache_a=local,cache_w=local,unroll=512",
        "t1024p8k32l": "tile=1024,patch=8,k_split=32,cache_a=local,cache_w=local,unroll=512",
        # few outputs (2047): split each output's reduction across threads
        "kt32t8": "tile=8,patch=1,k_threads=32,cache_a=global,cache_w=global,cache_c=global",
        "kt32t4": "tile=4,patch=1,k_threads=32,cache_a=global,cache_w=global,cache_c=global",
        "kt16t16": "tile=16,patch=1,k_threads=16,cache_a=global,cache_w=global,cache_c=global",
        "kt32t8u": "tile=8,patch=1,k_threads=32,cache_a=global,cache_w=global,cache_c=global,unroll=512",
        # pass 4, long signals: wider register windows (a 16-output patch does 1024 multiply-adds per 79 signal
        # and 64 tap loads, against 256 per 67 + 64 for 4 outputs), taps from shared memory (one broadcast
        # 128-bit load per 4 taps), full unrolling
        "c512p4k64u": "tile=512,patch=4,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        "c1024p8k64": "tile=1024,patch=8,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        "c1024p8k64ws": "tile=1024,patch=8,k_split=64,cache_w=shared,cache_a=local,unroll=4096",
        "c2048p16k64": "tile=2048,patch=16,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        "c2048p16k64ws": "tile=2048,patch=16,k_split=64,cache_w=shared,cache_a=local,unroll=4096",
        "c2048p16k32": "tile=2048,patch=16,k_split=32,cache_a=local,cache_w=local,unroll=4096",
        "c4096p16k64": "tile=4096,patch=16,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        "c1024p16k64": "tile=1024,patch=16,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        "c2048p8k64": "tile=2048,patch=8,k_split=64,cache_a=local,cache_w=local,unroll=4096",
        # pass 5: taps from shared memory (pass 4's winner) with other windows and k tiles
        "c512p4k64ws": "tile=512,patch=4,k_split=64,cache_w=shared,cache_a=local,unroll=4096",
        "c2048p8k64ws": "tile=2048,patch=8,k_split=64,cache_w=shared,cache_a=local,unroll=4096",
        "c1024p8k128ws": "tile=1024,patch=8,k_split=128,cache_w=shared,cache_a=local,unroll=4096",
        "c1024p8k32ws": "tile=1024,patch=8,k_split=32,cache_w=shared,cache_a=local,unroll=4096",
    },
    "dwconv2d": {
        # pass 1's winner: registers hold a (4+2)x(2+2) window per thread
        "t16x64p4x2l": "tile_h=16,tile_w=64,patch_h=4,patch_w=2,cache_x=local,cache_w=local",
        "t16x64p4x4l": "tile_h=16,tile_w=64,patch_h=4,patch_w=4,cache_x=local,cache_w=local,vector=4",
        "t32x64p4x2l": "tile_h=32,tile_w=64,patch_h=4,patch_w=2,cache_x=local,cache_w=local",
        "t16x128p4x4l": "tile_h=16,tile_w=128,patch_h=4,patch_w=4,cache_x=local,cache_w=local,vector=4",
        "t8x64p2x2l": "tile_h=8,tile_w=64,patch_h=2,patch_w=2,cache_x=local,cache_w=local",
        "t8x128p2x4s": "tile_h=8,tile_w=128,patch_h=2,patch_w=4,cache_x=shared,cache_w=local,vector=4",
        "t8x32p1x1g": "tile_h=8,tile_w=32,patch_h=1,patch_w=1,cache_x=global,cache_w=local",
        "t4x32p1x1g": "tile_h=4,tile_w=32,patch_h=1,patch_w=1,cache_x=global,cache_w=local",
    },
    "dwsep_conv2d": {
        # pass 1's winner: every F output of a pixel in one block, so D is computed once
        "f64p8h2w32": "tile_f=64,patch_f=8,tile_h=2,tile_w=32,patch_h=1,patch_w=2,c_split=8,cache_d=shared,"
                      "cache_p=local",
        "f64p8h2w32c16": "tile_f=64,patch_f=8,tile_h=2,tile_w=32,patch_h=1,patch_w=2,c_split=16,cache_d=shared,"
                         "cache_p=local",
        "f64p8h4w32": "tile_f=64,patch_f=8,tile_h=4,tile_w=32,patch_h=1,patch_w=2,c_split=8,cache_d=shared,"
                      "cache_p=local",
        "f64p16h2w32": "tile_f=64,patch_f=16,tile_h=2,tile_w=32,patch_h=1,patch_w=2,c_split=8,cache_d=shared,"
                       "cache_p=local",
        "f64p8h2w64": "tile_f=64,patch_f=8,tile_h=2,tile_w=64,patch_h=1,patch_w=4,c_split=8,cache_d=shared,"
                      "cache_p=local,vector=4",
    },
}

OP = "gemm"
PRESETS = ("baseline", "naive", "seed", "best")
OVER = ("best", "few-outputs", "defaults", "fitted")
EXTRAS = {"copies_at": 0.0, "dynamic_shared": False}
SPLITK = {"splitk": "G", "k_split": "KT", "tile_m": "TM", "tile_n": "TN", "patch_m": "PM", "patch_n": "PN",
          "stages": "stages"}


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ what a variant is
def parse(arg: str) -> tuple[str, str | None]:
    """NAME or NAME=SPEC -> (name, spec or None)."""
    name, eq, spec = arg.partition("=")
    if not name:
        raise ValueError(f"'{arg}' names no variant; write NAME or NAME=KNOBS.")
    return name, (spec if eq else None)


def split_spec(spec: str) -> tuple[str, dict]:
    """SPEC -> (knob text, what no knob offers: copies_at, dynamic_shared, splitk and its parameters)."""
    knobs, extra = [], {}
    items = [x.strip() for x in spec.split(",") if x.strip()]
    splitk = any(x.partition("=")[0] == "splitk" for x in items)
    for item in items:
        key, _, val = item.partition("=")
        if key == "copies_at":
            extra[key] = float(val)
        elif key == "dynamic_shared":
            extra[key] = val.lower() in ("true", "1", "yes")
        elif splitk and key in SPLITK:
            extra.setdefault("splitk", {})[SPLITK[key]] = int(val)
        elif splitk:
            raise ValueError(f"split-K variants take only {', '.join(SPLITK)}, not '{item}'.")
        else:
            knobs.append(item)
    return ",".join(knobs), extra


def base_knobs(s: dict, over: str, op: str = OP):
    """The knobs a SPEC applies over at shape s."""
    from kernels.knobs import BEST_FEW_OUTPUTS, fit, knob_class, preset
    if over == "best":
        return preset(op, "cuda", "best", s)
    if over == "few-outputs":
        return fit(knob_class(op, "cuda")(**BEST_FEW_OUTPUTS[(op, "cuda")][1]), s)
    if over in ("defaults", "fitted"):
        return fit(knob_class(op, "cuda")(), s)
    raise ValueError(f"--over is one of {', '.join(OVER)}, not '{over}'.")


def knobs_of(name: str, spec: str | None, s: dict, over: str = "best", op: str = OP):
    """A variant's validated knobs at shape s (KnobError where they do not fit it)."""
    from kernels.knobs import parse_knobs, preset, resolve, validate, KnobError, fit
    if spec is None:
        if name in PRESETS:
            return preset(op, "cuda", name, s)
        if name in CANDIDATES.get(op, {}):
            return resolve(op, "cuda", s, None, CANDIDATES[op][name])
        raise ValueError(f"'{name}' is neither a preset nor a {op} entry of bench.variants.CANDIDATES; "
                         f"give its knobs as {name}=KNOBS.")
    k = parse_knobs(op, "cuda", spec, base_knobs(s, over, op)) if spec else base_knobs(s, over, op)
    if over == "fitted":                        # clamped to the shape as a preset is (kernels.knobs.fit)
        k = fit(k, s)
    problems = validate(op, "cuda", k, s)
    if problems:
        raise KnobError(problems)
    return k


def dynamic(on: bool) -> None:
    """Switch the engine's shared stages to "shared.dyn" (and lift the 48 KB check to the 227 KB a block may
    take dynamically), or back."""
    from kernels import build, knobs
    from kernels.schedules import cuda
    if not hasattr(cuda, "_static_cache_read"):
        cuda._static_cache_read = cuda._cache_read
    static = cuda._static_cache_read
    cuda._cache_read = (lambda sch, blk, name, scope, padded:
                        static(sch, blk, name, "shared.dyn" if on and scope == "shared" else scope, padded)) \
        if on else static
    knobs.SHARED_LIMIT = (227 if on else 48) * 1024
    build.compiled.cache_clear()


def splitk_schedule(s: dict, G: int = 2, KT: int = 32, TM: int = 64, TN: int = 64, PM: int = 8, PN: int = 4,
                    stages: int = 2):
    """In-block split-K at shape s: G warp groups share each TM x TN block tile; rfactor splits every k tile of KT
    in G parts, group g sums its part into its own PM x PN register patch (best's cp.async pipeline and full
    unroll), the G partial tiles meet in shared memory (C_rf, which StorageRewrite lays over the B tile's space)
    and each thread adds up 4 rows x 4 columns of them."""
    import tvm
    from tvm import te
    from tvm.s_tir import Schedule
    from kernels.ops import OPS
    from kernels.schedules._common import Steps
    from kernels.schedules.cuda import _cooperative, annotate_pipeline
    sch = Schedule(tvm.IRModule({"main": te.create_prim_func(OPS["gemm"].define(s))}))
    blk = sch.get_sblock("C")
    _, _, k = sch.get_loops(blk)
    _, kg, _ = sch.split(k, [None, G, KT // G])
    rf = sch.rfactor(kg, 0)                      # C_rf[g, i, j]: group g's partial sums
    # C = sum over g of C_rf: each thread adds 4 rows x 4 columns, in registers, and stores float4s
    i, j, g = sch.get_loops(blk)
    bi, ii = sch.split(i, [None, TM])
    bj, jj = sch.split(j, [None, TN])
    sch.reorder(bi, bj, ii, jj, g)
    bx = sch.fuse(bi, bj)
    sch.bind(bx, "blockIdx.x")
    threads = G * (TM // PM) * (TN // PN)
    cols = TN // 4
    it, io = sch.split(ii, [threads // cols, TM // (threads // cols)])
    jt, jv = sch.split(jj, [cols, 4])
    sch.reorder(it, jt, io, jv, g)
    t = sch.fuse(it, jt)
    sch.bind(t, "threadIdx.x")
    acc = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(acc, t)
    sch.vectorize(sch.get_loops(acc)[-1])
    sch.set_scope(rf, 0, "shared")
    sch.compute_at(rf, bx)
    # the partial sums: best's schedule, with the group index outermost in threadIdx.x
    g2, i2, j2, ko, ki = sch.get_loops(rf)[1:]
    ti, pi = sch.split(i2, [TM // PM, PM])
    tj, pj = sch.split(j2, [TN // PN, PN])
    sch.reorder(g2, ti, tj, ko, ki, pi, pj)
    tx = sch.fuse(g2, ti, tj)
    sch.bind(tx, "threadIdx.x")
    fills = []
    for idx in (0, 1):
        sh = sch.cache_read(rf, idx, "shared")
        sch.compute_at(sh, ko)
        fills.append(sch.get(sh).name_hint)
        _cooperative(sch, sh, 3, threads, 4, Steps(), fills[-1])     # all threads copy float4s (bx, tx, ko above)
    for idx in (0, 1):
        sch.compute_at(sch.cache_read(rf, idx, "local"), ki)
    sch.reverse_compute_at(sch.cache_write(rf, 0, "local"), tx)
    sch.decompose_reduction(rf, ko)
    annotate_pipeline(sch, ko, fills, stages, async_copy=True)
    sch.annotate(bx, "pragma_auto_unroll_max_step", 4096)
    sch.annotate(bx, "pragma_unroll_explicit", 1)
    return sch


def module(name: str, spec: str | None, s: dict, over: str = "best", op: str = OP):
    """(knobs or None for a split-K variant, what no knob sets, the compiled executable, its loaded module or None
    where this machine has no GPU) of a variant at shape s. Leaves the engine's shared scope as the variant wants
    it (dynamic(False) restores it)."""
    from kernels import build, lowering
    text, extra = split_spec(spec) if spec else (spec, {})
    if "splitk" in extra:
        k, ex = None, lowering.compile(splitk_schedule(s, **extra["splitk"]).mod, "cuda")
    else:
        dynamic(bool(extra.get("dynamic_shared")))
        k = knobs_of(name, text, s, over, op)
        if not extra.get("copies_at"):
            ex, mod, _ = build.compiled(op, tuple(s.items()), k, "cuda")
            return k, extra, ex, mod
        sch, _ = build.create(op, s, k, "cuda")
        ex = lowering.compile(sch.mod, "cuda", lowering.disabled("cuda", k, s), k.min_blocks, k.one_barrier,
                              extra["copies_at"])
    return k, extra, ex, (ex.jit() if build.target_available("cuda") is None else None)


def shapes_arg(sizes: str | None, shapes: str | None, op: str = OP) -> list[dict]:
    """--sizes N,.. (GEMM N^3) or --shapes AxBx..,.. (the operator's dims in order: MxNxK for GEMM, BxCxHxWxKxF
    for the depthwise-separable convolution) -> shapes."""
    from kernels.ops import OPS
    dims = OPS[op].dims
    if sizes and op != OP:
        raise ValueError(f"--op {op} takes --shapes {'x'.join(dims)},.. (--sizes is GEMM's N^3).")
    out = [dict(zip("MNK", (int(n),) * 3)) for n in (sizes or "").split(",") if n]
    out += [dict(zip(dims, map(int, x.split("x")))) for x in (shapes or "").split(",") if x]
    if not out or any(len(s) != len(dims) for s in out):
        raise ValueError(f"give --shapes {'x'.join(dims)},.." + (" or --sizes N,.." if op == OP else ""))
    return out


def header(**extra) -> dict:
    from kernels import build
    return {"device": build.device_name("cuda"), "versions": build.versions(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}


def reference_row(s: dict, op: str = OP) -> dict:
    """A shape's data row with the vendor library (cuBLAS, cuDNN) timed (7 repeats, median) in this process."""
    import numpy as np
    from kernels import build
    from kernels.ops import OPS
    xs = OPS[op].random_inputs(s, np.random.default_rng(0))
    ref = build.reference_timer(op, "cuda", xs)
    if ref is None:
        raise SystemExit("bench.variants time measures on a CUDA GPU with torch beside TVM, and this machine has "
                         "none; run it on the GPU machine (bench/plans name its commands).")
    ts = build._time_host(ref[1], 7, ref[2])
    return {"shape": s, "reference": {"name": ref[0], "median_ms": float(np.median(ts))}, "runs": {}}


# ------------------------------------------------------------------ time: each variant once
def time_variants(variants: list[str], shapes: list[dict], over: str = "best", repeat: int = 7,
                  op: str = OP) -> dict:
    """Each variant against cuBLAS at each shape, verified on fresh inputs, in one process; a variant that does
    not build or launch is recorded with its error."""
    from kernels import build
    from kernels.knobs import knobs_text
    parsed = [parse(v) for v in variants]
    used = {x for _, spec in parsed if spec for x in split_spec(spec)[1] if x in EXTRAS}
    doc = header(units=f"median_ms, spread_ms (IQR) of {repeat} repeats", over=over, op=op,
                 variants={n: spec for n, spec in parsed}, shapes=[])
    try:
        for s in shapes:
            row = reference_row(s, op)
            for name, spec in parsed:
                try:
                    k, extra, _, mod = module(name, spec, s, over, op)
                    med, spread, rel, how = build.time_module(op, s, mod, "cuda", repeat)
                except Exception as e:      # noqa: BLE001 - a variant that fails to build or launch is data too
                    row["runs"][name] = {"error": (str(e).splitlines() or [type(e).__name__])[-1][:300]}
                    log(s, name, "failed:", row["runs"][name]["error"])
                    continue
                r = {"knobs": knobs_text(k)} if k is not None else {}
                r.update({x: extra.get(x, EXTRAS[x]) for x in EXTRAS if x in used})
                r.update(median_ms=med, spread_ms=spread, rel_err=rel, ok=bool(rel < build.TOLERANCE), timer=how)
                row["runs"][name] = r
                log(s, name, f"{med:.4f} ms", f"{row['reference']['median_ms'] / med:.3f}x", f"rel {rel:.1e}")
            doc["shapes"].append(row)
    finally:
        dynamic(False)
    return doc


# ------------------------------------------------------------------ rounds: base, variant, reference alternately
def rounds(shapes: list[dict], n_rounds: int = 10, base: str | None = None, variant: str | None = None,
           over: str = "best", target: str = "cuda") -> dict:
    """The base (best, or --base) and cuBLAS timed alternately, n_rounds rounds of 7 repeats each, in one process;
    with a variant (NAME=KNOBS over the base) timed in every round too, right after the base. With target cpu the
    base is the CPU's best, the reference numpy, and each side starts after the other's threads went idle."""
    import numpy as np
    import tvm
    from kernels import build
    from kernels.knobs import knobs_text, parse_knobs, preset, validate, KnobError
    from kernels.ops import OPS
    doc = header(method=f"{n_rounds} rounds; each round times best (build.kernel_timer, 7 repeats of >= 10 ms)"
                        f"{', then the variant (the same way)' if variant else ''} and then the reference (7 repeats "
                        "of >= 10 ms of back-to-back CUDA graph replays); ratio = reference median / best median of "
                        "the round", shapes=[])
    if base:
        doc["base"] = base
    vname, vtext = parse(variant) if variant else (None, None)
    if target == "cpu":
        doc["device"] = build.device_name("cpu")
        doc["method"] = doc["method"].replace("CUDA graph replays", "numpy calls, each side after a "
                                              f"{build.SETTLE_S} s pause")
    settle = (lambda: time.sleep(build.SETTLE_S)) if target == "cpu" else (lambda: None)
    for s in shapes:
        k = preset(OP, "cpu", "best", s) if target == "cpu" else \
            knobs_of(*parse(base), s, over) if base else knobs_of("best", None, s)
        _, mod, _ = build.compiled(OP, tuple(s.items()), k, target)
        rel = build.time_module(OP, s, mod, target, 1)[2]             # verified on fresh inputs first
        xs = OPS[OP].random_inputs(s, np.random.default_rng(0))
        ref = build.reference_timer(OP, target, xs)
        dev = build._tvm_dev(target)
        args = [tvm.runtime.tensor(x, dev) for x in xs]
        args.append(tvm.runtime.tensor(np.zeros(OPS[OP].output_shape(s), "float32"), dev))
        if vname:
            kv = parse_knobs(OP, target, vtext or "", k)
            if validate(OP, target, kv, s):
                raise KnobError(validate(OP, target, kv, s))
            _, vmod, _ = build.compiled(OP, tuple(s.items()), kv, target)
            vrel = build.time_module(OP, s, vmod, target, 1)[2]       # verified on fresh inputs first
        best_ms, var_ms, ref_ms = [], [], []
        for _ in range(n_rounds):
            settle()
            best_ms.append(float(np.median(build._time_tvm(mod, dev, args, 7))))
            if vname:
                var_ms.append(float(np.median(build._time_tvm(vmod, dev, args, 7))))
            settle()
            ref_ms.append(float(np.median(build._time_host(ref[1], 7, ref[2]))))
        ratios = [r / b for r, b in zip(ref_ms, best_ms)]
        row = {"shape": s, "knobs": knobs_text(k), "rel_err": rel, "ok": rel < build.TOLERANCE,
               "reference": ref[0], "best_ms": best_ms, "ref_ms": ref_ms, "ratios": ratios,
               "median_ratio": float(np.median(ratios)), "min_ratio": min(ratios), "max_ratio": max(ratios)}
        line = f"ratio median {np.median(ratios):.4f}, range {min(ratios):.4f}-{max(ratios):.4f}"
        if vname:
            vr = [r / v for r, v in zip(ref_ms, var_ms)]
            gain = [b / v for b, v in zip(best_ms, var_ms)]
            row["variant"] = {"name": vname, "knobs": knobs_text(kv), "rel_err": vrel, "ok": vrel < build.TOLERANCE,
                              "ms": var_ms, "ratios": vr, "median_ratio": float(np.median(vr)),
                              "min_ratio": min(vr), "max_ratio": max(vr), "speedup_over_best": gain,
                              "median_speedup": float(np.median(gain)), "rounds_faster": sum(g > 1 for g in gain)}
            line += (f"; {vname} median {np.median(vr):.4f}, range {min(vr):.4f}-{max(vr):.4f}, "
                     f"{np.median(gain):.4f}x best's speed, faster in {row['variant']['rounds_faster']} of {n_rounds}")
        doc["shapes"].append(row)
        log("x".join(map(str, s.values())), line)
    return doc


def _best_checked(op: str, s: dict, target: str):
    """best at shape s compiled, verified against float64 on fresh inputs, and its kernel_timer: (knobs, module,
    device, rel. error, device arrays, inputs, how it is timed, one repeat)."""
    from kernels import build
    from kernels.knobs import preset
    k = preset(op, target, "best", s)
    _, mod, _ = build.compiled(op, tuple(s.items()), k, target)
    dev = build._tvm_dev(target)
    rel, args, xs = build.call_verified(op, s, mod, dev, target)
    how, once = build.kernel_timer(mod, dev, args)
    return k, mod, dev, rel, args, xs, how, once


# ------------------------------------------------------------------ timers: the two ways of timing, side by side
def timers(shapes: list[dict], op: str = OP, n_rounds: int = 5) -> dict:
    """At each shape, best and the vendor library each timed both ways, alternately, n_rounds rounds of one repeat
    (>= 10 ms of calls) each, in one process: best by CUDA graph replay (build.kernel_timer, how every kernel is
    timed now) and by TVM's time_evaluator (how every kernel was timed before 2026-12-07 18:40 UTC); the vendor library by
    CUDA graphs filled with calls (reference_timer, now) and of one call each (before)."""
    import numpy as np
    from kernels import build
    from kernels.knobs import knobs_text
    doc = header(method=f"{n_rounds} rounds of one repeat (>= 10 ms of calls) of each way; medians of the rounds",
                 op=op, shapes=[])
    for s in shapes:
        k, mod, dev, rel, args, xs, how, graph = _best_checked(op, s, "cuda")
        evaluator = build._evaluator(mod, dev, args)
        sides = {"ours_graph": graph, "ours_time_evaluator": evaluator}
        for name, fill in (("vendor_graph", True), ("vendor_one_call_graph", False)):
            ref = build.reference_timer(op, "cuda", xs, fill=fill)
            if ref is None:
                raise SystemExit("bench.variants timers compares timings on a CUDA GPU with torch beside TVM, and "
                                 "this machine has none; run it on the GPU machine (bench/plans name its commands).")
            sides[name] = build._repeater(ref[1], ref[2])
        ms: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(n_rounds):
            for name, once in sides.items():
                ms[name].append(once())
        med = {name: float(np.median(v)) for name, v in ms.items()}
        row = {"shape": s, "knobs": knobs_text(k), "rel_err": rel, "ok": rel < build.TOLERANCE, "timer": how,
               "ours_calls_a_graph": getattr(graph, "calls", None), "reference": ref[0], "ms": ms, "median_ms": med,
               "vs_vendor_now": med["vendor_graph"] / med["ours_graph"],
               "vs_vendor_before": med["vendor_one_call_graph"] / med["ours_time_evaluator"]}
        doc["shapes"].append(row)
        log("x".join(map(str, s.values())), ", ".join(f"{n} {v * 1e3:.2f} us" for n, v in med.items()),
            f"vs vendor {row['vs_vendor_before']:.2f}x before, {row['vs_vendor_now']:.2f}x now")
    return doc


# ------------------------------------------------------------------ wake: a CPU repeat after a pause, with and without a first call
def wake(shapes: list[dict], op: str = OP, n_rounds: int = 9) -> dict:
    """On this CPU, at each shape, best and the reference library (numpy) each timed in repeats that follow a
    pause of build.SETTLE_S (as build.alternate pauses beside the reference), with and without one untimed call
    first (the side's `wake`), alternately, n_rounds rounds of one repeat (>= 10 ms of calls) each, in one
    process."""
    import time
    import numpy as np
    from kernels import build
    from kernels.knobs import knobs_text
    doc = header(method=f"{n_rounds} rounds; in each, for each side, a pause of {build.SETTLE_S} s then a repeat, "
                        f"and a pause then one untimed call then a repeat; medians of the rounds", op=op, shapes=[])
    for s in shapes:
        k, mod, dev, rel, args, xs, how, ours = _best_checked(op, s, "cpu")
        name, fn, sync = build.reference_timer(op, "cpu", xs)
        sides = {"ours": ours, "reference": build._repeater(fn, sync)}
        ours()                      # a repeat made while sizing (kernel_timer's first): not after a pause
        ms: dict[str, list[float]] = {f"{n}_{w}": [] for n in sides for w in ("cold", "woken")}
        for _ in range(n_rounds):
            for n, once in sides.items():
                for w in ("cold", "woken"):
                    time.sleep(build.SETTLE_S)
                    if w == "woken":
                        once.wake()
                    ms[f"{n}_{w}"].append(once())
        med = {n: float(np.median(v)) for n, v in ms.items()}
        row = {"shape": s, "knobs": knobs_text(k), "rel_err": rel, "ok": rel < build.TOLERANCE, "timer": how,
               "reference": name, "ms": ms, "median_ms": med,
               "vs_reference_cold": med["reference_cold"] / med["ours_cold"],
               "vs_reference_woken": med["reference_woken"] / med["ours_woken"]}
        doc["shapes"].append(row)
        log("x".join(map(str, s.values())), ", ".join(f"{n} {v:.4f} ms" for n, v in med.items()))
    return doc


# ------------------------------------------------------------------ mix: the machine code, no GPU
def mix_variants(variants: list[str], shapes: list[dict], over: str = "best", op: str = OP) -> dict:
    """Each variant's static instruction mix at each shape (kernels.sass.mix: the cubin the GPU would run,
    compiled here); a variant whose knobs do not fit a shape is recorded there with the sentence that says why,
    as `time` records one that fails."""
    from kernels.sass.mix import mix
    from kernels.knobs import KnobError, knobs_text
    doc = {"op": op, "over": over, "shapes": []}
    for s in shapes:
        row = {"shape": s, "runs": {}}
        for name, spec in (parse(v) for v in variants):
            try:
                k = knobs_of(name, spec, s, over, op)
            except KnobError as e:
                row["runs"][name] = {"error": str(e)}
                log(s, name, "does not fit:", str(e))
                continue
            row["runs"][name] = {"knobs": knobs_text(k), **mix(op, s, k)}
        doc["shapes"].append(row)
    return doc


def measured_rows(files: list[str], op: str, shape: dict) -> dict[str, float]:
    """{knob text: fastest median ms} of every run of `op` at `shape` that these data files record."""
    from kernels.knobs import knob_class, knobs_text, parse_knobs
    found: dict[str, float] = {}

    def walk(x, at):
        if isinstance(x, dict):
            at = x.get("shape", at)
            kn, ms = x.get("knobs"), x.get("median_ms")
            if isinstance(kn, str) and isinstance(ms, (int, float)) and at == shape and x.get("ok", True):
                try:
                    text = knobs_text(parse_knobs(op, "cuda", kn, knob_class(op, "cuda")()))
                except Exception:           # noqa: BLE001 - another operator's knobs
                    return
                found[text] = min(ms, found.get(text, ms))
            for v in x.values():
                walk(v, at)
        elif isinstance(x, list):
            for v in x:
                walk(v, at)
    for f in files:
        walk(json.loads(Path(f).read_text()), None)
    return found


def mix_measured(files: list[str], shape: dict, op: str = OP) -> dict:
    """The static instruction mix of every setting these data files measured at `shape`, beside its time, and
    how closely the share of multiply-adds follows the time (Pearson's r of log ms against the share), over all
    of them and over those within 10% of the fastest."""
    import numpy as np
    from kernels.sass.mix import mix
    from kernels.knobs import knob_class, parse_knobs
    rows = []
    for text, ms in sorted(measured_rows(files, op, shape).items(), key=lambda kv: kv[1]):
        rows.append({"knobs": text, "median_ms": ms,
                     **mix(op, shape, parse_knobs(op, "cuda", text, knob_class(op, "cuda")()))})
    def r(xs):
        return float(np.corrcoef(np.log([x["median_ms"] for x in xs]), [x["ffma_share"] for x in xs])[0, 1]) \
            if len(xs) > 2 else None
    near = [x for x in rows if rows and x["median_ms"] <= 1.1 * rows[0]["median_ms"]]
    return {"op": op, "shape": shape, "measured_in": files, "rows": rows, "r_log_ms_ffma_share": r(rows),
            "within_10pct_of_fastest": {"count": len(near), "r_log_ms_ffma_share": r(near),
                                        "ffma_share": [min((x["ffma_share"] for x in near), default=None),
                                                       max((x["ffma_share"] for x in near), default=None)]}}


# ------------------------------------------------------------------ command line
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.variants", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time", help="each variant once against cuBLAS at each shape, in one process")
    r = sub.add_parser("rounds", help="the base, a variant and cuBLAS timed alternately, round by round")
    for x in (t, r):
        x.add_argument("--sizes", help="N,.. (GEMM N^3)")
        x.add_argument("--shapes", help="MxNxK,.. (with --op, the operator's dims in order, x between)")
        x.add_argument("--over", default="best", choices=OVER, help="what a variant's knob text applies over")
    t.add_argument("--repeat", type=int, default=7)
    t.add_argument("--op", default=OP, choices=("gemm", "conv1d", "dwconv2d", "dwsep_conv2d"),
                   help="the operator (GEMM unless named; --over few-outputs is GEMM's)")
    t.add_argument("variants", nargs="+", metavar="VARIANT", help="NAME or NAME=SPEC")
    r.add_argument("--rounds", type=int, default=10)
    r.add_argument("--base", help="what stands for best (a VARIANT; default: the best preset at each shape)")
    r.add_argument("--variant", help="NAME=KNOBS: the base with these knobs changed, timed in every round too")
    r.add_argument("--target", default="cuda", choices=("cuda", "cpu"), help="cpu: best on this CPU against numpy")
    tm = sub.add_parser("timers", help="best and the vendor library each timed both ways (CUDA graphs; TVM's "
                                       "time_evaluator and one-call graphs, as before 2026-12-07), alternately")
    tm.add_argument("--op", default=OP, choices=("gemm", "conv1d", "dwconv2d", "dwsep_conv2d"))
    tm.add_argument("--shapes", required=True, help="the operator's dims in order, x between")
    tm.add_argument("--rounds", type=int, default=5)
    w = sub.add_parser("wake", help="on this CPU, best and numpy each timed after a pause, with and without one "
                                    "untimed call first, alternately")
    w.add_argument("--op", default=OP, choices=("gemm", "conv1d", "dwconv2d", "dwsep_conv2d"))
    w.add_argument("--shapes", required=True, help="the operator's dims in order, x between")
    w.add_argument("--rounds", type=int, default=9)
    s = sub.add_parser("source", help="a variant's CUDA source (no GPU needed)")
    s.add_argument("--size", type=int, default=1024)
    s.add_argument("--over", default="best", choices=OVER)
    s.add_argument("variant", metavar="VARIANT")
    m = sub.add_parser("mix", help="each variant's static instruction mix (the cubin compiled here; no GPU needed)")
    m.add_argument("--op", default=OP, choices=("gemm", "conv1d", "dwconv2d", "dwsep_conv2d"))
    m.add_argument("--shapes", required=True, help="the operator's dims in order, x between")
    m.add_argument("--over", default="best", choices=OVER)
    m.add_argument("--measured", help="FILE,..: instead of VARIANTs, every setting these data files timed at the "
                                      "(one) shape, with its time")
    m.add_argument("variants", nargs="*", metavar="VARIANT", help="NAME or NAME=SPEC")
    ls = sub.add_parser("list", help="the catalogue of named knob sets")
    ls.add_argument("--op", help="one operator (default: all)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    if a.cmd == "rounds" and a.target == "cpu" and a.base:
        p.error("--base names CUDA variants and on the CPU the base is the best preset; leave --base out.")
    if a.cmd == "list":
        print(json.dumps({o: v for o, v in CANDIDATES.items() if not a.op or o == a.op}, indent=1))
        return 0
    if a.cmd == "source":
        s = dict(zip("MNK", (a.size,) * 3))
        print(module(*parse(a.variant), s, a.over)[2].mod.imports[0].inspect_source())
        dynamic(False)
        return 0
    op = getattr(a, "op", OP)
    default = "4096x4096x4096,1024x1024x1024" if op == OP and not getattr(a, "sizes", None) else None
    try:
        shapes = shapes_arg(getattr(a, "sizes", None), a.shapes or default, op)
    except ValueError as e:
        p.error(str(e))
    if a.cmd == "mix":
        if a.measured:
            if len(shapes) != 1 or a.variants:
                p.error("--measured takes one shape and no VARIANT: it reads the settings from the data files.")
            doc = mix_measured(a.measured.split(","), shapes[0], op)
        elif not a.variants:
            p.error("give VARIANTs, or --measured FILE,.. for the settings a data file timed.")
        else:
            doc = mix_variants(a.variants, shapes, a.over, op)
    elif a.cmd == "time":
        doc = time_variants(a.variants, shapes, a.over, a.repeat, op)
    elif a.cmd == "timers":
        doc = timers(shapes, op, a.rounds)
    elif a.cmd == "wake":
        doc = wake(shapes, op, a.rounds)
    else:
        doc = rounds(shapes, a.rounds, a.base, a.variant, a.over, a.target)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
