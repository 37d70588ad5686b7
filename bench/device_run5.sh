#!/usr/bin/env bash
# On the GPU machine: pass 4 (cp.async pipelines and full k unrolling for GEMM, wider register windows for
# conv1d), Nsight Compute counters of the new kernels (with the LDGSTS metrics), and the reference
# libraries' device times. Writes everything under $OUT.
#   carry: [".tvmcarry"]   command: bash bench/device_run5.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
G=$(python3 -c "from bench.tuning import CANDIDATES as C; print(','.join(n for n in C['gemm'] if n.startswith('g')))")
C=$(python3 -c "from bench.tuning import CANDIDATES as C; print(','.join(n for n in C['conv1d'] if n.startswith('c')))")
timeout 200 python3 -m bench.h200 table --out "$OUT" --name t4096.json --candidates --rows 0 --only t64p4k16u,$G
timeout 170 python3 -m bench.h200 table --out "$OUT" --name t1024.json --candidates --rows 1 --only t64p4k16u,$G
timeout 150 python3 -m bench.h200 table --out "$OUT" --name tconv.json --candidates --rows 2 --only t512p4k64l,$C
python3 - <<'PY'
import json
from bench.tuning import CANDIDATES as C
L = [{"op": "gemm", "shape": {"M": 1024, "N": 1024, "K": 1024}, "preset": None, "knobs": v}
     for n, v in C["gemm"].items() if n.startswith("g")]
L += [{"op": "gemm", "shape": {"M": 1000, "N": 1024, "K": 1000}, "preset": None, "knobs": C["gemm"][n]}
      for n in ("g128k16a", "g64k16a3")]
L += [{"op": "conv1d", "shape": {"M": 1 << 20, "N": 1024}, "preset": None, "knobs": C["conv1d"][n]}
      for n in ("c2048p16k64", "c2048p16k64ws", "c1024p8k64")]
json.dump(L, open("/tmp/ncu_list.json", "w"), indent=1)
PY
M=smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum
X=smsp__inst_executed_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum
timeout 120 ncu --clock-control none --kernel-name regex:main_kernel --metrics $M,$X --csv --print-units base \
  python3 -m bench.h200 ncu-launch --list /tmp/ncu_list.json > "$OUT/ncu.csv" 2> /tmp/ncu.err
echo "ncu exit $?"; grep launched "$OUT/ncu.csv"; tail -3 /tmp/ncu.err; cp /tmp/ncu_list_launched.json "$OUT/"
timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  python3 -m bench.ref_ncu > "$OUT/ref_ncu.csv" 2> /tmp/ref.err
echo "ref ncu exit $?"; grep -c '"' "$OUT/ref_ncu.csv"; tail -2 /tmp/ref.err
echo "done $(date -u +%H:%M:%S)"
