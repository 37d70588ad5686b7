#!/usr/bin/env bash
# On the GPU machine: the spread of the GEMM goal ratios, best against cuBLAS ten times over in one process
# (bench/ratio_spread.py).   carry: [".tvmcarry"]   command: bash bench/device_run19.sh
source bench/device_env.sh
timeout 240 python3 -m bench.ratio_spread "$OUT"
echo "done $(date -u +%H:%M:%S)"
