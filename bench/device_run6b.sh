#!/usr/bin/env bash
# On the GPU machine, part 2: Nsight Compute counters of every shipped preset and the spread (with the `best`
# picked in part 1: carry its picks.json as bench/picks_run6.json), the reference libraries' device times,
# and the correctness sweep over the course shapes.
#   carry: [".tvmcarry"]   command: bash bench/device_run6b.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
P=bench/picks_run6.json
python3 -m bench.ncu_list /tmp/ncu_list.json $P
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed_op_ldgsts.sum,gpu__time_duration.sum
timeout 170 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; tail -2 /tmp/ncu.err; cp /tmp/ncu_list_launched.json "$OUT/"
timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  python3 -m bench.ref_ncu > "$OUT/ref_ncu.csv" 2> /tmp/ref.err
echo "ref ncu exit $?"
timeout ${SWEEP_T:-170} python3 -m bench.h200 sweep --out "$OUT" --budget-s ${SWEEP_S:-150} --workers 15 --picks $P
echo "done $(date -u +%H:%M:%S)"
