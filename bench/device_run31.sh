#!/usr/bin/env bash
# On the GPU machine: the GEMM part of the correctness sweep again (every course shape x every preset, against
# float64 on fresh inputs), with today's presets: best is the 128x128 transposed-A tiles at M=10000 and N=10000.
#   carry: [".tvmcarry"]   command: bash bench/device_run31.sh
source bench/device_env.sh
timeout 300 python3 -m bench.h200 sweep --out "$OUT" --ops gemm --budget-s 260 --workers 15
echo "done $(date -u +%H:%M:%S)"
