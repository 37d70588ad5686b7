#!/usr/bin/env bash
# On the GPU machine: GEMM pass 3 (software pipelining; the Walkthrough's step kernels at 1024^3), best
# re-picked over the merged table, Nsight Compute for the GEMM best kernels, then more of the
# depthwise correctness sweep. Writes everything under $OUT.
#   carry: [".tvmcarry"]   command: bash bench/device_run4.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
PIPE=t64p4k16u-pipe,t64p4k32u-pipe,t64p4k8u-pipe,t128x64p8x4k16u-pipe,t128p8k8u-pipe
timeout 150 python3 -m bench.h200 table --out /tmp --name t1024.json --candidates --rows 1 --only walk-1,walk-2,walk-3,walk-4,$PIPE
timeout 120 python3 -m bench.h200 table --out /tmp --name t4096.json --candidates --rows 0 --only $PIPE
python3 -m bench.merge data/h200_bench.json /tmp/t4096.json /tmp/t1024.json > "$OUT/table.json"
python3 -m bench.picks "$OUT/table.json" "$OUT/picks.json"
python3 - <<'PY'
import json
from bench.ncu_list import items
import os
p = json.load(open(os.path.join(os.environ["OUT"], "picks.json")))
json.dump([i for i in items(p) if i["op"] == "gemm" and i["preset"] == "best"], open("/tmp/ncu_list.json", "w"))
PY
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
timeout 90 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; cp /tmp/ncu_list_launched.json "$OUT/"
timeout ${SWEEP_T:-220} python3 -m bench.h200 sweep --out "$OUT" --budget-s ${SWEEP_S:-200} --workers 15 \
  --picks "$OUT/picks.json" --seed 1 --ops dwconv2d,dwsep_conv2d
echo "done $(date -u +%H:%M:%S)"
