#!/usr/bin/env bash
# On the GPU machine: why GEMM best stops where it does: ncu sections for best and cuBLAS at 4096^3 and 1024^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run8.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 240 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis_Tables --csv --print-units base \
  python3 -m bench.why_gemm > "$OUT/why_gemm.csv" 2> /tmp/why.err
echo "ncu exit $?"; tail -3 /tmp/why.err; grep -c '"' "$OUT/why_gemm.csv"
echo "done $(date -u +%H:%M:%S)"
