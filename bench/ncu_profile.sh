#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters of the kernels in a list (bench/ncu_list*.json), one ncu run.
#   usage: bash bench/ncu_profile.sh LIST.json TIMEOUT_S     (from a bench/device_run*.sh, carry [".tvmcarry"])
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
cp "$1" /tmp/ncu_list.json
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
X=smsp__inst_executed_op_ldgsts.sum
timeout "$2" ncu --clock-control none --kernel-name regex:main_kernel --metrics $M,$X --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; tail -3 /tmp/ncu.err; cp /tmp/ncu_list_launched.json "$OUT/"
echo "done $(date -u +%H:%M:%S)"
