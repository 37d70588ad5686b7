#!/usr/bin/env bash
# On the GPU machine: is one_barrier=true faster than best, round by round? best, best+one_barrier and cuBLAS
# timed alternately ten times over in one process (bench/ratio_spread.py --variant); then the held-out
# Nsight Compute check of three one_barrier kernels (bench/ncu_list23.json), predictions committed first.
#   carry: [".tvmcarry"]   command: bash bench/device_run23.sh
source bench/device_env.sh
timeout 300 python3 -m bench.ratio_spread "$OUT" --variant best-1b=one_barrier=true \
  --command "bash bench/device_run23.sh (python3 -m bench.ratio_spread --variant best-1b=one_barrier=true)"
bash bench/ncu_profile.sh bench/ncu_list23.json 200
