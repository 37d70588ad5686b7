#!/usr/bin/env bash
# Adds xgboost (MetaSchedule's default cost model; .xgbslim, built by bench/bundle.sh) to the TVM bundle that
# .tvmslim/install.sh installed in /tmp/site on this machine. bundle.sh copies this file to .xgbslim/install.sh.
set -e
S=${KERNEL_LAB_SITE:-/tmp/site}
if [[ ! -f $S/tvm/lib/libtvm_compiler.so ]]; then
  echo "TVM is not installed on this machine: run .tvmslim/install.sh first (bench/install_tvm.sh says how)." >&2
  exit 3
fi
[[ -d $S/xgboost ]] || tar -xJf "$(dirname "${BASH_SOURCE[0]}")/site.tar.xz" -C "$S"
