#!/usr/bin/env bash
# On the GPU machine (through `device`): Nsight Compute counters for the listed kernels, then the
# correctness sweep until its budget runs out. Writes everything under $OUT.
#   carry: [".tvmcarry"]   command: bash bench/device_run1.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c "import tvm, torch; print(tvm.__version__, tvm.cuda(0).exist, torch.__version__, torch.cuda.get_device_name())" | tee "$OUT/env.txt"
python3 -m bench.ncu_list "$OUT/ncu_list.json"
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
timeout 240 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list "$OUT/ncu_list.json" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu exit $?; $(grep -c main_kernel "$OUT/ncu.csv") metric rows"; tail -3 "$OUT/ncu.err"
timeout 290 python3 -m bench.h200 sweep --out "$OUT" --budget-s ${SWEEP_S:-250} --workers 14
echo "done $(date -u +%H:%M:%S)"
