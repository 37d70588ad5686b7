#!/usr/bin/env bash
# On the GPU machine: GEMM pass 6 (rows 0 and 1 only); if it beats part 1's pick, Nsight Compute and the
# course-shape sweep for the new GEMM best. carry: [".tvmcarry"]   command: bash bench/device_run7.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 200 python3 -m bench.h200 table --out "$OUT" --name t7.json --candidates --rows 0,1 \
  --only ${ONLY:-g64p8x4k32a,g64p8x4k32a3,g64x128p8x4k32a,g64x128p8x4k16a,g128x64k32a}
python3 -m bench.picks "$OUT/t7.json" "$OUT/picks7.json"
python3 - <<'PY' || { echo "gemm pick unchanged"; exit 0; }
import json, os, sys
old = json.load(open("bench/picks_run6.json")); new = json.load(open(os.path.join(os.environ["OUT"], "picks7.json")))
if new["gemm"]["name"] == old["gemm"]["name"]:
    sys.exit(1)
old["gemm"] = new["gemm"]; json.dump(old, open(os.path.join(os.environ["OUT"], "picks_merged.json"), "w"), indent=1)
from bench.ncu_list import items
json.dump([i for i in items(old) if i["op"] == "gemm" and i["preset"] == "best"], open("/tmp/ncu_list.json", "w"))
PY
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__inst_executed_op_ldgsts.sum,gpu__time_duration.sum
timeout 90 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; cp /tmp/ncu_list_launched.json "$OUT/"
timeout 100 python3 -m bench.h200 sweep --out "$OUT" --budget-s 80 --workers 15 --picks "$OUT/picks_merged.json" --ops gemm
echo "done $(date -u +%H:%M:%S)"
