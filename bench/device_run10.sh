#!/usr/bin/env bash
# On the GPU machine: why GEMM stops short of cuBLAS, per stall reason: ncu metrics for best, best interleaved,
# a 128x128 tile of 8x8 patches, and cuBLAS at 4096^3.   carry: [".tvmcarry"]   command: bash bench/device_run10.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 300 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --metrics "$(python3 -m bench.why_gemm --stall-metrics)" \
  --csv --print-units base python3 -m bench.why_gemm --stalls > "$OUT/stalls.csv" 2> /tmp/why.err
echo "ncu exit $?"; tail -3 /tmp/why.err; grep -c '"' "$OUT/stalls.csv"
echo "done $(date -u +%H:%M:%S)"
