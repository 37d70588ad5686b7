#!/usr/bin/env bash
# On the GPU machine: the two kernels of bench/device_run20.sh that min_blocks capped, without the cap, to tell
# the cap's effect on the counters from the shape's (bench/ncu_list21.json).
#   carry: [".tvmcarry"]   command: bash bench/device_run21.sh
exec bash bench/ncu_profile.sh bench/ncu_list21.json 200
