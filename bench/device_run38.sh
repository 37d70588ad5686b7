#!/usr/bin/env bash
# On the GPU machine: the held-out Nsight Compute check of four pad_tiles kernels (best at 1000^3, 2000^3,
# 1000x1024x1024 and 1024x1000x1024: bench/ncu_list38.json), predictions committed first.
#   carry: [".tvmcarry"]   command: bash bench/device_run38.sh
bash bench/ncu_profile.sh bench/ncu_list38.json 400
