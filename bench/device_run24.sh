#!/usr/bin/env bash
# On the GPU machine: the GEMM rows again with best = one_barrier (and pass 5's knobs without it, g64p8x4k32a,
# timed in the same run); then where best's warps stall, instruction by instruction: Nsight Compute's PC
# sampling (SourceCounters, WarpStateStats) of best and cuBLAS at 4096^3, exported as the SASS source page.
#   carry: [".tvmcarry"]   command: bash bench/device_run24.sh
source bench/device_env.sh
timeout 300 python3 -m bench.h200 table --out "$OUT" --name t24.json --candidates --rows 0,1 --only g64p8x4k32a
timeout 200 ncu --clock-control none --kernel-name regex:"main_kernel|gemm" --section SourceCounters \
  --section WarpStateStats -f -o /tmp/src24 python3 -m bench.why_gemm --stalls g64p8x4k32a-1b > /tmp/src.log 2>&1
echo "ncu exit $?"; tail -2 /tmp/src.log
ncu -i /tmp/src24.ncu-rep --page source --csv --print-source sass > "$OUT/src24_sass.csv" 2> /tmp/src.err
echo "export exit $?"; tail -2 /tmp/src.err; wc -l "$OUT/src24_sass.csv"; head -c 600 "$OUT/src24_sass.csv"
gzip -c /tmp/src24.ncu-rep > "$OUT/src24.ncu-rep.gz"; ls -la "$OUT"
echo "done $(date -u +%H:%M:%S)"
