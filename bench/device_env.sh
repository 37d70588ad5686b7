# Sourced by the GPU scripts (bench/ncu_profile.sh, bench/device_run16.sh on): strict mode, unbuffered output, the TVM bundle
# installed (carry: [".tvmcarry"]) and on the path, and the start time in $OUT/started.
set -uo pipefail
export PYTHONUNBUFFERED=1
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
