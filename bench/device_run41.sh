#!/usr/bin/env bash
# On the GPU machine: GEMM's two best tilings (the 64x64 tiles of 8x4, BEST_FEW_OUTPUTS; the transposed 128x128
# tiles of 8x8) at five sizes neither was measured at, to tell two models of where each wins apart. Run 39 showed
# the wave-fill rule (best's 128x128 tiles wherever their last wave is >= 90% full) wrong at 2816^3 (8x4 7% faster)
# and a tie at 3584^3. Both models take one constant from 4096^3 (2.911 ms for 1024 blocks of 128x128, 2 per SM;
# 2.980 ms for 4096 blocks of 64x64, 5 per SM) and scale with K:
#   per-SM model: T = ceil(blocks / 132) * t  (an SM shares its time among its blocks; 8 and 32 blocks at 4096^3)
#   wave model:   T = ceil(blocks / slots) * t (whole waves of 264 or 660 slots; 4 and 7 at 4096^3)
# Predictions, committed before the run (ms, 128x128 / 8x4, and the faster):
#   size  per-SM              waves
#   1280  0.114 / 0.116 big   0.284 / 0.166 small
#   1792  0.318 / 0.244 small 0.318 / 0.372 big
#   3840  2.388 / 2.445 big   2.729 / 2.394 small
#   4608  4.094 / 4.191 big   4.094 / 3.831 small
#   6144  9.825 / 9.778 tie   9.825 / 8.940 small
#   carry: [".tvmcarry"]   command: bash bench/device_run41.sh
source bench/device_env.sh
timeout 500 python3 -m bench.kmajor "$OUT" 41 best,kmi128p8k16 1280,1792,3840,4608,6144
echo "done $(date -u +%H:%M:%S)"
