#!/usr/bin/env bash
# On the GPU machine: A's shared tile stored k-major (bench/kmajor.py) against best and cuBLAS at 4096^3 and 1024^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run27.sh
source bench/device_env.sh
timeout 500 python3 -m bench.kmajor "$OUT" 27
echo "done $(date -u +%H:%M:%S)"
