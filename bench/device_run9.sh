#!/usr/bin/env bash
# On the GPU machine: GEMM pass 7 (interleaved shared tiles), rows 0 and 1 of the table, and the picks.
# carry: [".tvmcarry"]   command: bash bench/device_run9.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
timeout 500 python3 -m bench.h200 table --out "$OUT" --name t9.json --candidates --rows 0,1 \
  --only ${ONLY:-g64p8x4k32a,i64p8x4k32a,i64p8x4k16a,i64p8x4k16a3,i128x64k16a,i64x128p8k16a,i64x128p8k16a3,i64x128p8k8a3,i128x64p8k16a,i128x64p8k8a3,i128p8k8a,i128p8k16a}
python3 -m bench.picks "$OUT/t9.json" "$OUT/picks9.json"; cat "$OUT/picks9.json"
echo "done $(date -u +%H:%M:%S)"
