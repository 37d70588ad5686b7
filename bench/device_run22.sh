#!/usr/bin/env bash
# On the GPU machine: GEMM pass 11 (one barrier per k tile: one_barrier), rows 0 and 1 with the pass-11
# candidates and pass 5's winner (best's knobs, timed again in the same run), then Nsight Compute's stall
# reasons for best with and without the merged barrier at 4096^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run22.sh
source bench/device_env.sh
C=$(python3 -c "from bench.tuning import CANDIDATES as C; print(','.join(n for n in C['gemm'] if n.endswith('-1b')))")
timeout 400 python3 -m bench.h200 table --out "$OUT" --name t22.json --candidates --rows 0,1 --only g64p8x4k32a,$C
M=$(python3 -m bench.why_gemm --stall-metrics)
timeout 150 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --csv --print-units base --metrics "$M" \
  python3 -m bench.why_gemm --stalls g64p8x4k32a,g64p8x4k32a-1b > "$OUT/stalls_22.csv" 2> /tmp/st.err
echo "ncu exit $?"; tail -2 /tmp/st.err
echo "done $(date -u +%H:%M:%S)"
