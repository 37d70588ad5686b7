#!/usr/bin/env bash
# Builds .tvmslim, the TVM bundle the device plans carry (bench/run.py's DEVICE_PREFIX installs it there):
# apache-tvm and apache-tvm-ffi at requirements.txt's pins, plus the RPC/MetaSchedule extras the GPU machine
# lacks (tornado, psutil, cloudpickle, and xgboost-cpu, the library of MetaSchedule's default cost model, so that
# bench.anchors runs MetaSchedule as its users do). Once per machine, ~4 minutes; skips if up to date.
#
#   bash bench/bundle.sh            # then: python -m bench.run PLAN --print
set -euo pipefail
cd "$(dirname "$0")/.."
out=.tvmslim
pin() { sed -n "s/^$1==\([^ ]*\).*/\1/p" requirements.txt; }
export TVM_VERSION=$(pin 'apache-tvm\[rpc\]') TVM_FFI_VERSION=$(pin apache-tvm-ffi)
grep -qx "$out/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "$out/" >> .git/info/exclude; }
if [[ -f $out/.done-extras-$TVM_VERSION-$TVM_FFI_VERSION ]]; then echo "$out is up to date"; exit 0; fi
rm -rf "$out"
bash ../shared/device/make-tvm-bundle.sh "$out"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$out/extras" "tornado==$(pin tornado)" "psutil==$(pin psutil)" "cloudpickle==$(pin cloudpickle)" \
  "xgboost-cpu==$(pin xgboost-cpu)"
# The carry limit (64 MiB with the working tree) leaves no room for apache-tvm-ffi's sources and tests: unpack
# the ffi wheel and the extras, drop those, and ship them as one site.tar.xz the install unpacks.
site=$(mktemp -d); trap 'rm -rf "$site"' EXIT
python3 -c "import zipfile,sys; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]" "$site" \
  "$out"/apache_tvm_ffi-*.whl "$out"/extras/*.whl
rm -rf "$site"/tvm_ffi/src "$site"/tvm_ffi/cython "$site"/tvm_ffi/include/dlpack/*.md "$site"/tornado/test
# xgboost's parts for Spark, Dask and its own tests are imported by nothing MetaSchedule calls
rm -rf "$site"/xgboost/spark "$site"/xgboost/dask "$site"/xgboost/testing "$site"/xgboost/include
# nor its C headers and its dlpack and libbacktrace sources (for building C++ extensions; TVM reads them only
# when it exports a library holding a C source module, which no kernel here does: TVM's own headers are left
# out below too): 0.64 MB of the carry limit. Its testing library stays: the ffi's core module links it.
rm -rf "$site"/tvm_ffi/include "$site"/tvm_ffi/3rdparty
find "$site" -name __pycache__ -prune -exec rm -rf {} +
tar -C "$site" -cJf "$out/site.tar.xz" .
rm -rf "$out"/apache_tvm_ffi-*.whl "$out/extras"
# TVM's own runtime C++ sources (tvm/src, for building minrpc and contrib runtimes elsewhere) are not used here:
# without them the tree and the bundle stay under the carry limit as the tree grows
# nor are its C headers, topi's test helpers and the cutlass and hexagon contribs (imported by nothing here);
# the compiler library is recompressed with xz's x86 branch filter, -9e and a dictionary that holds all of it
# (one thread, ~4 minutes): 1.65 MB smaller than plain -9e, which leaves room for a held-out batch's cubins
# (.heldout/SEED.tar.xz, ~0.7 MB) in the same call
py=$(mktemp -d); tar -C "$py" -xJf "$out/tvm-py.tar.xz"
rm -rf "$py/tvm/src" "$py/tvm/include" "$py/tvm/topi/testing" "$py/tvm/contrib/cutlass" "$py/tvm/contrib/hexagon"
xz -dc "$out/libtvm_compiler.so.xz" | xz -T1 --x86 --lzma2=preset=9e,dict=192MiB > "$out/libtvm_compiler.so.xz.9e"
mv "$out/libtvm_compiler.so.xz.9e" "$out/libtvm_compiler.so.xz"
tar -C "$py" -cJf "$out/tvm-py.tar.xz" .; rm -rf "$py"
sed -i 's|python3 -m pip install .*apache_tvm_ffi-\*.whl|tar -xJf "$here/site.tar.xz" -C $S|' "$out/install.sh"
grep -q site.tar.xz "$out/install.sh"
touch "$out/.done-extras-$TVM_VERSION-$TVM_FFI_VERSION"
du -sh "$out"
