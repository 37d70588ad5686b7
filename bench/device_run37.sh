#!/usr/bin/env bash
# On the GPU machine: best as it ships (pad_tiles on: M and N padded to whole tiles, K not) against best with
# pad_tiles=false and cuBLAS, five alternating rounds at eight shapes the tiles do not divide, each kernel verified
# first; then the GEMM part of the correctness sweep with today's presets (every course shape x every preset,
# against float64 on fresh inputs).
#   carry: [".tvmcarry"]   command: bash bench/device_run37.sh
source bench/device_env.sh
SHAPES=4000x4000x4000,2000x2000x2000,4000x6000x1000,1000x1000x1000,3000x3000x3000,10000x1024x1024,1000x1024x1024,1024x1000x1024
timeout 300 python3 -m bench.ratio_spread "$OUT" --variant "guarded=pad_tiles=false" --shapes $SHAPES --rounds 5 \
  --command "bash bench/device_run37.sh (python3 -m bench.ratio_spread --variant guarded=pad_tiles=false --shapes \
$SHAPES --rounds 5)"
timeout 250 python3 -m bench.h200 sweep --out "$OUT" --ops gemm --budget-s 200 --workers 15
echo "done $(date -u +%H:%M:%S)"
