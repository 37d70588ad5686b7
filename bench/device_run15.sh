#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters of four conv1d kernels the constant_copy rule was not fitted on:
# tap tiles clamped at the end of a reduction 128 or 64 does not divide; predictions committed before the run
# (bench/ncu_list15.json, commit message).
#   carry: [".tvmcarry"]   command: bash bench/device_run15.sh
exec bash bench/ncu_profile.sh bench/ncu_list15.json 300
