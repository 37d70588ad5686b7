#!/usr/bin/env bash
# On the GPU machine: 128 outputs per thread (8x16 or 16x8 patches) with A transposed and B interleaved
# (bench/kmajor.py) against best and cuBLAS, at 4096^3 and 1024^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run32.sh
source bench/device_env.sh
timeout 400 python3 -m bench.kmajor "$OUT" 32 kmi128p8k16,kmi128p8x16k16,kmi128p16x8k16,kmi128x256p8x16k8,kmi256x128p16x8k8,kmi128p8x16k8
echo "done $(date -u +%H:%M:%S)"
