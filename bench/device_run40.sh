#!/usr/bin/env bash
# On the GPU machine: shared tiles over 48 KB (dynamic shared memory, bench/dyn_shared.py): k tiles of 64 and
# deeper pipelines of the 8x4 tiles at 1024^3, 3-4 stages and k tiles of 32 of the transposed 128x128 tiles
# at 4096^3, each against best and cuBLAS in one process.
#   carry: [".tvmcarry"]   command: bash bench/device_run40.sh
source bench/device_env.sh
timeout 240 python3 -m bench.dyn_shared "$OUT" 40 best,dyn-best,d-k64,d-k64s3,d-k32s4,d-128x64k64 1024
mv "$OUT/dyn_shared_40.json" "$OUT/dyn_shared_40_1024.json"
timeout 330 python3 -m bench.dyn_shared "$OUT" 40 best,km,d-km,d-kms3,d-kms4,d-kmk32,d-kmk32s3,d-k64 4096
echo "done $(date -u +%H:%M:%S)"
