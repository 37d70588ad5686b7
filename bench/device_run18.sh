#!/usr/bin/env bash
# On the GPU machine: GEMM pass 10 (block launch order: group_m), rows 0 and 1 with the pass-10 candidates and
# pass 5's winner (best's knobs, timed again in the same run), then the L2 hit rate and DRAM reads of best
# and two groupings at 4096^3.
#   carry: [".tvmcarry"]   command: bash bench/device_run18.sh
source bench/device_env.sh
C=$(python3 -c "from bench.tuning import CANDIDATES as C; print(','.join(n for n in C['gemm'] if n[-3:] in ('-g4', '-g8') or n.endswith('-g16')))")
timeout 360 python3 -m bench.h200 table --out "$OUT" --name t18.json --candidates --rows 0,1 --only g64p8x4k32a,$C
timeout 120 ncu --clock-control none --kernel-name regex:"main_kernel" --csv --print-units base \
  --metrics lts__t_sector_hit_rate.pct,dram__bytes_read.sum,gpu__time_duration.sum \
  python3 -m bench.why_gemm --stalls g64p8x4k32a,g64p8x4k32a-g8,g64p8x4k32a-g16 > "$OUT/l2_18.csv" 2> /tmp/l2.err
echo "ncu exit $?"; tail -2 /tmp/l2.err
echo "done $(date -u +%H:%M:%S)"
