#!/usr/bin/env bash
# On the GPU machine: the spread of the GEMM goal ratios, best against cuBLAS ten times over in one process
# (bench/ratio_spread.py).   carry: [".tvmcarry"]   command: bash bench/device_run19.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 240 python3 -m bench.ratio_spread "$OUT"
echo "done $(date -u +%H:%M:%S)"
