#!/usr/bin/env bash
# On the GPU machine: the wave rule (kernels.knobs.gemm_waves_short) at four sizes it was not fitted on. Its
# predictions, committed before the run: the 8x4 tiles faster at 1536^3 (144 blocks of 128x128, 0.55 of a wave
# of 264) and 3328^3 (676 blocks, 0.85 of the last of three waves); best's 128x128 tiles faster at 2816^3
# (484 blocks, 0.92) and 3584^3 (784 blocks, 0.99).
#   carry: [".tvmcarry"]   command: bash bench/device_run39.sh
source bench/device_env.sh
timeout 400 python3 -m bench.kmajor "$OUT" 39 best,kmi128p8k16 1536,2816,3328,3584
echo "done $(date -u +%H:%M:%S)"
