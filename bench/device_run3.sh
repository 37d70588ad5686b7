#!/usr/bin/env bash
# On the GPU machine: the benchmark table with the tuning candidates, then `best` picked from it
# (bench/picks.py), then Nsight Compute counters and the correctness sweep for those picks.
#   carry: [".tvmcarry"]   command: bash bench/device_run3.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout ${TABLE_S:-270} python3 -m bench.h200 table --out "$OUT" --candidates
python3 -m bench.picks "$OUT/table.json" "$OUT/picks.json"
python3 -m bench.ncu_list /tmp/ncu_list.json "$OUT/picks.json"
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
timeout ${NCU_S:-150} ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?; $(grep -c '"main_kernel' "$OUT/ncu.csv") metric rows"; grep "launched" "$OUT/ncu.csv"; tail -2 /tmp/ncu.err
cp /tmp/ncu_list_launched.json "$OUT/"
timeout ${SWEEP_T:-130} python3 -m bench.h200 sweep --out "$OUT" --budget-s ${SWEEP_S:-110} --workers 14 --picks "$OUT/picks.json"
echo "done $(date -u +%H:%M:%S)"
