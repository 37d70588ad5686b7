#!/usr/bin/env bash
# On the GPU machine: the register budget ptxas gives TVM's kernels. TVM compiles with NVRTC and ptxas
# --register-usage-level=10 (its default, TVM_CUDA_PTXAS_REG_LEVEL); the 8x8-patch GEMMs then hold 129-167
# registers (data/h200_gemm_stalls.json). Rows 0 and 1 again with level 5 (ptxas's own default) and with
# --maxrregcount=128.   carry: [".tvmcarry"]   command: bash bench/device_run12.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
C=g64p8x4k32a,g64p8k16a,i64p8k16a,i64x128p8k16a,i128p8k16a,i128x64p8k16a
TVM_CUDA_PTXAS_REG_LEVEL=5 timeout 250 python3 -m bench.h200 table --out "$OUT" --name t12_level5.json --candidates --rows 0,1 --only $C
TVM_CUDA_PTXAS_EXTRA_OPTS=--maxrregcount=128 timeout 250 python3 -m bench.h200 table --out "$OUT" --name t12_max128.json --candidates --rows 0,1 --only $C
echo "done $(date -u +%H:%M:%S)"
