#!/usr/bin/env bash
# Installs the TVM bundle (.tvmslim, built by bench/bundle.sh) into /tmp/site once per machine, on the GPU
# machine; then: export PYTHONPATH=/tmp/site:$PYTHONPATH. bundle.sh copies this file to .tvmslim/install.sh.
#
# The bundle and the working tree are over the 64 MiB that one device call carries, so the bundle travels in two
# calls, the second right after the first (a machine stays warm 30 s after a call, and /tmp/site with it):
#   1. carry [".tvmslim/libtvm_compiler.so.xz", ".tvmslim/install.sh"]    bash .tvmslim/install.sh
#      stages TVM's compiler library (259 MB unpacked) on the machine;
#   2. carry [".tvmslim/site.tar.xz", ".tvmslim/tvm-py.tar.xz", ".tvmslim/install.sh", ".xgbslim"]
#      bash .tvmslim/install.sh && ... finishes the install and runs the command.
# Where everything fits in one call, one call does both. Later calls on the same warm machine skip the install.
set -e
here=$(dirname "${BASH_SOURCE[0]}"); S=${KERNEL_LAB_SITE:-/tmp/site}; L=$S/tvm/lib
if [[ -f $L/libtvm_compiler.so ]]; then exit 0; fi
mkdir -p "$L"
if [[ -f $here/libtvm_compiler.so.xz ]]; then
  xz -dc "$here/libtvm_compiler.so.xz" > "$L/libtvm_compiler.so.part"
fi
if [[ ! -f $here/site.tar.xz || ! -f $here/tvm-py.tar.xz ]]; then
  if [[ -f $L/libtvm_compiler.so.part ]]; then
    echo "TVM's compiler library is staged; now, within 30 s, the call that carries .tvmslim/site.tar.xz," \
         ".tvmslim/tvm-py.tar.xz and .tvmslim/install.sh." >&2
    exit 0
  fi
  echo "The TVM bundle is not on this machine (given back since the last call, or never installed): first a call" \
       "that carries .tvmslim/libtvm_compiler.so.xz and .tvmslim/install.sh and runs bash .tvmslim/install.sh." >&2
  exit 3
fi
if [[ ! -f $L/libtvm_compiler.so.part ]]; then
  echo "TVM's compiler library is not staged on this machine (it was given back since the first call): carry" \
       ".tvmslim/libtvm_compiler.so.xz and .tvmslim/install.sh, run bash .tvmslim/install.sh, then this call again." >&2
  exit 3
fi
tar -xJf "$here/site.tar.xz" -C "$S"
tar -xJf "$here/tvm-py.tar.xz" -C "$S"
# relax's frontends (onnx, torch importers) are left out of the bundle; an empty package keeps `import tvm` working
mkdir -p "$S/tvm/relax/frontend" && touch "$S/tvm/relax/frontend/__init__.py"
mv "$L/libtvm_compiler.so.part" "$L/libtvm_compiler.so"
