#!/usr/bin/env bash
# On the GPU machine, part 1 of the final pass: every benchmark row with its presets, dlight and the pass-4/5
# candidates (plus the shared-vs-local runs), then `best` picked from it (bench/picks.py).
#   carry: [".tvmcarry"]   command: bash bench/device_run6a.sh      (then bench/device_run6b.sh)
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
G=g64p8x4k16a,g64p8x4k16a3,g128x64k16a,g128x64k16a3,g64k32a,g128k16p,g64p8x4k32a,g64p8x4k16p,g64p8x4k32p,g64p8x4k8a3,g64p8x4k16u,g128x64p8k8a3,g64x128p8k8a3,g64x128p8k16a,g64x128p8k16a3,g128x64k32a,g32x64p4x4k32a,g64x32p8x4k32a
C=c1024p8k64ws,c1024p8k64,c512p4k64ws,c2048p8k64ws,c1024p8k128ws,c1024p8k32ws,kt32t8u
S=seed-local,seed-shared,seed-shared+local,t16x128p4x4l,f64p16h2w32
timeout 420 python3 -m bench.h200 table --out "$OUT" --candidates --only $G,$C,$S
python3 -m bench.picks "$OUT/table.json" "$OUT/picks.json"
echo "done $(date -u +%H:%M:%S)"
