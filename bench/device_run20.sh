#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters of three GEMM kernels with the knobs added in this pass
# (min_blocks, group_m), which the simulator says change no count; predictions committed before the run
# (bench/ncu_list20.json, commit message).
#   carry: [".tvmcarry"]   command: bash bench/device_run20.sh
exec bash bench/ncu_profile.sh bench/ncu_list20.json 240
