#!/usr/bin/env bash
# On the GPU machine: pad_tiles padding M, N and K (KERNEL_LAB_PAD_K=1, as the knob did in commit 67f4091) against
# padding M and N only (KERNEL_LAB_PAD_K=0), each against best without pad_tiles and cuBLAS, five alternating
# rounds at four shapes where K is not a multiple of the k tile.
#   carry: [".tvmcarry"]   command: bash bench/device_run36.sh
source bench/device_env.sh
SHAPES=1024x1024x1000,3000x3000x3000,4000x6000x1000,1000x1000x1000
mkdir -p $OUT/all $OUT/mn
KERNEL_LAB_PAD_K=1 timeout 250 python3 -m bench.ratio_spread "$OUT/all" --variant "pad=pad_tiles=true" --shapes $SHAPES --rounds 5 --command "KERNEL_LAB_PAD_K=1 python3 -m bench.ratio_spread --variant pad=pad_tiles=true --shapes $SHAPES --rounds 5"
KERNEL_LAB_PAD_K=0 timeout 250 python3 -m bench.ratio_spread "$OUT/mn" --variant "pad-mn=pad_tiles=true" --shapes $SHAPES --rounds 5 --command "KERNEL_LAB_PAD_K=0 python3 -m bench.ratio_spread --variant pad-mn=pad_tiles=true --shapes $SHAPES --rounds 5"
