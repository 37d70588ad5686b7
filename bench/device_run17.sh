#!/usr/bin/env bash
# On the GPU machine: in-block split-K GEMMs (bench/splitk.py: two warp groups per block tile, partial tiles
# summed in shared memory) against best and cuBLAS at 1024^3 and 4096^3.   carry: [".tvmcarry"]
#   command: bash bench/device_run17.sh
source bench/device_env.sh
timeout 300 python3 -m bench.splitk "$OUT"
echo "done $(date -u +%H:%M:%S)"
