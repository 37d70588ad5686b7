#!/usr/bin/env bash
# On the GPU machine: where best's two GEMM schedules cross (BEST_FEW_OUTPUTS' threshold, 2 * 132 * 128^2
# outputs): the 8x4 tiles and the transposed 128x128 tiles against cuBLAS at 2048^3, 3072^3 and 2560^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run33.sh
source bench/device_env.sh
timeout 200 python3 -m bench.kmajor "$OUT" 33 best,kmi128p8k16 2048,2560,3072
echo "done $(date -u +%H:%M:%S)"
