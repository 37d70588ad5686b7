#!/usr/bin/env bash
# On the GPU machine: Nsight Compute counters of ten kernels the simulator was not calibrated on (new shapes
# and presets of every operator, chosen to exercise the last counter rules: async-copy runs, branch/predicate
# split of guarded copies, the first-arm loads of a row branch, block-residue sectors, lone tap copies).
# Their predictions were committed before this run (bench/ncu_list14.json, commit message).
#   carry: [".tvmcarry"]   command: bash bench/device_run14.sh
exec bash bench/ncu_profile.sh bench/ncu_list14.json 400
