#!/usr/bin/env bash
# On the GPU machine: GEMM pass 9 (launch bounds: min_blocks), rows 0 and 1 with the pass-9 candidates and
# pass 5's winner (best's knobs, timed again in the same run), then the stall metrics and register counts of
# best, best with min_blocks=6 and the 8x8 patches capped at 128 registers.
#   carry: [".tvmcarry"]   command: bash bench/device_run16.sh
source bench/device_env.sh
C=$(python3 -c "from bench.tuning import CANDIDATES as C; print(','.join(n for n in C['gemm'] if '-mb' in n))")
timeout 360 python3 -m bench.h200 table --out "$OUT" --name t16.json --candidates --rows 0,1 --only g64p8x4k32a,$C
timeout 150 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --metrics "$(python3 -m bench.why_gemm --stall-metrics)" \
  --csv --print-units base python3 -m bench.why_gemm --stalls g64p8x4k32a,g64p8x4k32a-mb6,g64p8k16a-mb8,g64x128p8k16a-mb4 \
  > "$OUT/stalls16.csv" 2> /tmp/why.err
echo "ncu exit $?"; tail -3 /tmp/why.err; grep -c '"' "$OUT/stalls16.csv"
echo "done $(date -u +%H:%M:%S)"
