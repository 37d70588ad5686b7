#!/usr/bin/env bash
# On the GPU machine: best GEMM as kernels.knobs.gemm_big_tiles_slower now picks its tiles (the SM with the most
# blocks sets the time), at the four shapes of the pad_tiles runs where it picks the other tiling than the
# wave-fill rule did, each against that other tiling in five alternating rounds; then the GEMM part of the
# correctness sweep again with today's presets (every course shape x preset, against float64 on fresh inputs).
# The rule's predictions, committed before the run (ms per 4096 of K of the busiest SM, 128x128 / 64x64):
#   10000x1024x1024 and 1024x10000x1024: 1.820 / 1.862, the 128x128 tiles 2.3% faster (the last rule: 64x64)
#   4000^3: 2.911 / 2.886, the 64x64 tiles 0.9% faster; 4000x6000x1000: 4.367 / 4.190, 64x64 4% faster (the
#   last rule: 128x128)
#   carry: [".tvmcarry"]   command: bash bench/device_run42.sh
source bench/device_env.sh
BIG=tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,transpose_a=true,interleave=true
SMALL=tile_m=64,tile_n=64,patch_m=8,patch_n=4,k_split=32,transpose_a=false,interleave=false
run() {     # NAME KNOBS SHAPES
  timeout 150 python3 -m bench.ratio_spread "$OUT" --variant "$1=$2" --shapes "$3" --rounds 5 \
    --command "bash bench/device_run42.sh (python3 -m bench.ratio_spread --variant $1=$2 --shapes $3 --rounds 5)"
  mv "$OUT/ratio_spread.json" "$OUT/ratio_spread_$1.json"
}
run tiles64 $SMALL 10000x1024x1024,1024x10000x1024
run tiles128 $BIG 4000x4000x4000,4000x6000x1000
timeout 250 python3 -m bench.h200 sweep --out "$OUT" --ops gemm --budget-s 200 --workers 15
echo "done $(date -u +%H:%M:%S)"
