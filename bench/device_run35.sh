#!/usr/bin/env bash
# On the GPU machine: pad_tiles (pad_einsum up to whole tiles, K included as in commit 67f4091) where the tiles do
# not divide M, N or K: today's best against best with pad_tiles=true and cuBLAS, five alternating rounds at
# three shapes of best's 128x128 tiles and four of its 8x4 tiles, each kernel verified first.
#   carry: [".tvmcarry"]   command: bash bench/device_run35.sh
source bench/device_env.sh
SHAPES=4000x4000x4000,2000x2000x2000,4000x6000x1000,1000x1024x1024,1024x1024x1000,10000x1024x1024,3000x3000x3000
timeout 400 python3 -m bench.ratio_spread "$OUT" --variant "pad=pad_tiles=true" --shapes $SHAPES --rounds 5 \
  --command "bash bench/device_run35.sh (python3 -m bench.ratio_spread --variant pad=pad_tiles=true --shapes \
$SHAPES --rounds 5)"
echo "done $(date -u +%H:%M:%S)"
