#!/usr/bin/env bash
# On the GPU machine: where the copies go in a k tile (bench/late_copies.py) against best and cuBLAS at 4096^3 and 1024^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run26.sh
source bench/device_env.sh
timeout 300 python3 -m bench.late_copies "$OUT"
echo "done $(date -u +%H:%M:%S)"
