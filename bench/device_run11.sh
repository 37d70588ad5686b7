#!/usr/bin/env bash
# On the GPU machine: GEMM pass 8 (8x8 patches on 64x64 tiles), rows 0 and 1, then per-stall-reason ncu metrics
# for them and the 64x128 tile of 8x8 patches.   carry: [".tvmcarry"]   command: bash bench/device_run11.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 330 python3 -m bench.h200 table --out "$OUT" --name t11.json --candidates --rows 0,1 \
  --only g64p8k16a,i64p8k16a,i64p8k16a3,i64p8k8a3,g64p8k8a3
timeout 150 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --metrics "$(python3 -m bench.why_gemm --stall-metrics)" \
  --csv --print-units base python3 -m bench.why_gemm --stalls g64p8k16a,i64p8k16a,i64x128p8k16a,i64p8k8a3 > "$OUT/stalls11.csv" 2> /tmp/why.err
echo "ncu exit $?"; tail -3 /tmp/why.err; grep -c '"' "$OUT/stalls11.csv"
echo "done $(date -u +%H:%M:%S)"
