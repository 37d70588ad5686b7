#!/usr/bin/env bash
# On the GPU machine: the GEMM rows with best = 128x128 tiles of 8x8, A transposed (transpose_a), B interleaved
# (below two blocks per SM, BEST_FEW_OUTPUTS's 8x4 schedule), with pass 12's candidates and the previous best
# (g64p8x4k32a-1b) timed in the same run; ten alternating rounds of best, the previous best and cuBLAS
# (bench/ratio_spread.py --variant); then the held-out Nsight Compute check of four transpose_a kernels
# (bench/ncu_list30.json), predictions committed first.
#   carry: [".tvmcarry"]   command: bash bench/device_run30.sh
source bench/device_env.sh
PREV=tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,interleave=false,transpose_a=false
timeout 280 python3 -m bench.h200 table --out "$OUT" --name t30.json --candidates --rows 0,1 \
  --only g64p8x4k32a-1b,t128p8k16a,t128x64p8k16a-1b
timeout 150 python3 -m bench.ratio_spread "$OUT" --variant "prev-best=$PREV" \
  --command "bash bench/device_run30.sh (python3 -m bench.ratio_spread --variant prev-best=$PREV)"
bash bench/ncu_profile.sh bench/ncu_list30.json 120
