"""Knob sets measured beside the presets on the H200, chosen by reading each schedule's access pattern and
the first tuning pass (data/h200_tuning_1.json). The fastest that verifies becomes `best` (bench/picks.py).
Each comment says what the variant tests."""

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
        # Measured (bench/device_run16.sh): all slower than best at both sizes. min_blocks=6 did give 80 registers
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
        # Measured (bench/device_run18.sh): L2 hits 64% -> 86% (8) and 90% (16), DRAM reads 2.04 -> 0.48 GB, and
        # the same time to 0.1% at both sizes: best is bound by issue slots, not by memory
        "g64p8x4k32a-g4": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=4",
        "g64p8x4k32a-g8": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=8",
        "g64p8x4k32a-g16": "tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=16",
        "g128x64k32a-g8": "tile_m=128,tile_n=64,patch_m=8,patch_n=4,k_split=32,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096,group_m=8",
        # pass 11: barriers. Nsight Compute puts best's warps at a barrier 0.69 cycles per issued instruction
        # against cuBLAS's 0.11 (data/h200_gemm_stalls.json); best's k loop has two barriers per 1024
        # multiply-adds, cuBLAS's one. one_barrier=true merges TVM's two into one (kernels/lowering.merge_barriers).
        # Measured (bench/device_run22.sh): best's knobs with it 2.979 ms against 3.001, barrier stalls 0.69 ->
        # 0.39, issue active 81.9 -> 82.4%; every other schedule here slower than that. Ten alternating rounds
        # (bench/device_run23.sh): faster in 8 of 10 at 4096^3 and 10 of 10 at 1024^3, so best ships it
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
        # tiles ran 2.91 ms in bench/device_run29.sh (bench/kmajor.py, data/h200_kmajor.json), 127 registers
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
