#!/usr/bin/env bash
# On the GPU machine: late copies (bench/late_copies.py) against best and cuBLAS at 4096^3 and 1024^3.
# (Ran bench/late_copies.py as of commit d025dbe, five variants; bench/device_run26.sh runs its present form.)
#   carry: [".tvmcarry"]   command: bash bench/device_run25.sh
source bench/device_env.sh
timeout 300 python3 -m bench.late_copies "$OUT"
echo "done $(date -u +%H:%M:%S)"
