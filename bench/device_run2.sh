#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters for bench/ncu_list.py's kernels, the roofline ceilings,
# then the benchmark table with the tuning candidates. Writes everything under $OUT.
#   carry: [".tvmcarry"]   command: bash bench/device_run2.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
python3 -m bench.ncu_list "$OUT/ncu_list.json"
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
timeout ${NCU_S:-170} ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list "$OUT/ncu_list.json" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu exit $?; $(grep -c '"main_kernel' "$OUT/ncu.csv") metric rows"; grep "not launched\|launched" "$OUT/ncu.csv" | head; tail -2 "$OUT/ncu.err"
timeout 40 python3 -m bench.ceilings "$OUT/ceilings.json"
timeout ${TABLE_S:-330} python3 -m bench.h200 table --out "$OUT" ${TABLE_ARGS:---candidates}
echo "done $(date -u +%H:%M:%S)"
