#!/usr/bin/env bash
# On the GPU machine: Nsight Compute's stall reasons for A k-major variants (bench/kmajor.py) beside best and cuBLAS at 4096^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run28.sh
source bench/device_env.sh
M=$(python3 -m bench.why_gemm --stall-metrics)
timeout 300 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --csv --print-units base --metrics "$M" \
  python3 -m bench.kmajor --launch best,km128p8k16,km64x128p8k16,km-best > "$OUT/stalls_28.csv" 2> /tmp/st.err
echo "ncu exit $?"; tail -2 /tmp/st.err
echo "done $(date -u +%H:%M:%S)"
