#!/usr/bin/env bash
# On the GPU machine: interleave where the tiles do not divide M or N (the layout now pads the last block tile).
# best's 128x128 tiles (the 8x4 tiles have no interleave), which now keep interleave there, against best with
# interleave=false (what ran there before) and cuBLAS: five alternating rounds at three shapes the tiles do not
# divide, each kernel verified first; then the GEMM part of the correctness sweep again with
# today's presets (every course shape x every preset, against float64 on fresh inputs).
#   carry: [".tvmcarry"]   command: bash bench/device_run34.sh
source bench/device_env.sh
SHAPES=4000x4000x4000,2000x2000x2000,4000x6000x1000
timeout 250 python3 -m bench.ratio_spread "$OUT" --variant "no-interleave=interleave=false" --shapes $SHAPES \
  --rounds 5 --command "bash bench/device_run34.sh (python3 -m bench.ratio_spread --variant \
no-interleave=interleave=false --shapes $SHAPES --rounds 5)"
timeout 300 python3 -m bench.h200 sweep --out "$OUT" --ops gemm --budget-s 260 --workers 15
echo "done $(date -u +%H:%M:%S)"
