#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters of four conv1d kernels the constant_copy rule was not fitted on:
# tap tiles clamped at the end of a reduction 128 or 64 does not divide; predictions committed before the run
# (bench/ncu_list15.json, commit message).
#   carry: [".tvmcarry"]   command: bash bench/device_run15.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
nvidia-smi --query-gpu=name --format=csv,noheader
cp bench/ncu_list15.json /tmp/ncu_list.json
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
X=smsp__inst_executed_op_ldgsts.sum
timeout 300 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M,$X --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; tail -3 /tmp/ncu.err; cp /tmp/ncu_list_launched.json "$OUT/"
echo "done $(date -u +%H:%M:%S)"
