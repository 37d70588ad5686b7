#!/usr/bin/env bash
# On the GPU machine: A k-major with B's columns interleaved (bench/kmajor.py kmi*) against best and cuBLAS,
# then Nsight Compute's stall reasons for two of them.
#   carry: [".tvmcarry"]   command: bash bench/device_run29.sh
source bench/device_env.sh
timeout 330 python3 -m bench.kmajor "$OUT" 29 best,kmi128p8k16,kmi128p8k8,kmi64x128p8k16,kmi128x64p8k16,kmi64p8k16
M=$(python3 -m bench.why_gemm --stall-metrics)
timeout 150 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --csv --print-units base --metrics "$M" \
  python3 -m bench.kmajor --launch kmi128p8k16,kmi64x128p8k16 > "$OUT/stalls_29.csv" 2> /tmp/st.err
echo "ncu exit $?"; tail -2 /tmp/st.err
echo "done $(date -u +%H:%M:%S)"
