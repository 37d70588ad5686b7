#!/usr/bin/env bash
# On the GPU machine: cubins of the kernels the simulator does not yet reproduce, compiled as TVM compiles them
# there (NVRTC), for reading their SASS elsewhere.   carry: [".tvmcarry"]   command: bash bench/device_run13.sh
set -uo pipefail
bash .tvmcarry/install.sh && export PYTHONPATH=/tmp/site:$PWD:${PYTHONPATH:-} || exit 1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/started"
timeout 200 python3 -m bench.cubins "$OUT"
which cuobjdump nvdisasm; python3 -c "import cuda.bindings, sys; print('cuda-bindings', cuda.bindings.__version__)"
echo "done $(date -u +%H:%M:%S)"
