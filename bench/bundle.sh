#!/usr/bin/env bash
# Builds .tvmslim, the TVM bundle the device plans carry (bench/run.py's DEVICE_PREFIX installs it there):
# apache-tvm and apache-tvm-ffi at requirements.txt's pins, plus the RPC/MetaSchedule extras the GPU machine
# lacks (tornado, psutil, cloudpickle). Once per machine, ~4 minutes; skips if up to date.
#
#   bash bench/bundle.sh            # then: python -m bench.run PLAN --print
# The bundle travels in two device calls (bench/install_tvm.sh, its install script, says how; --print gives both).
#
# It also builds .xgbslim: xgboost-cpu (MetaSchedule's default cost model) for bench.anchors' MetaSchedule runs,
# its library stripped and Spark/Dask/test parts left out (2.8 MB), carried by the second call
# (bench/install_xgb.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.tvmslim
pin() { sed -n "s/^$1==\([^ ]*\).*/\1/p" requirements.txt; }
export TVM_VERSION=$(pin 'apache-tvm\[rpc\]') TVM_FFI_VERSION=$(pin apache-tvm-ffi)
grep -qx "$out/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "$out/" >> .git/info/exclude; }
xgb=.xgbslim
grep -qx "$xgb/" .git/info/exclude || echo "$xgb/" >> .git/info/exclude
if [[ ! -f $xgb/.done-$(pin xgboost-cpu) ]]; then
  rm -rf "$xgb"; mkdir -p "$xgb"; w=$(mktemp -d); u=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$w" "xgboost-cpu==$(pin xgboost-cpu)"
  python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[2]).extractall(sys.argv[1])" "$u" "$w"/*.whl
  rm -rf "$u"/xgboost/spark "$u"/xgboost/dask "$u"/xgboost/testing "$u"/xgboost/include
  strip --strip-unneeded "$u"/xgboost/lib/libxgboost.so
  tar -C "$u" -cf - . | xz -T1 --x86 --lzma2=preset=9e > "$xgb/site.tar.xz"; rm -rf "$w" "$u"
  touch "$xgb/.done-$(pin xgboost-cpu)"
fi
cp bench/install_xgb.sh "$xgb/install.sh"
if [[ -f $out/.done-extras-$TVM_VERSION-$TVM_FFI_VERSION ]]; then
  cp bench/install_tvm.sh "$out/install.sh"; echo "$out is up to date"; exit 0
fi
rm -rf "$out"
bash ../shared/device/make-tvm-bundle.sh "$out"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$out/extras" "tornado==$(pin tornado)" "psutil==$(pin psutil)" "cloudpickle==$(pin cloudpickle)"
# The carry limit (64 MiB with the working tree) leaves no room for apache-tvm-ffi's sources and tests: unpack
# the ffi wheel and the extras, drop those, and ship them as one site.tar.xz the install unpacks.
site=$(mktemp -d); trap 'rm -rf "$site"' EXIT
python3 -c "import zipfile,sys; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]" "$site" \
  "$out"/apache_tvm_ffi-*.whl "$out"/extras/*.whl
rm -rf "$site"/tvm_ffi/src "$site"/tvm_ffi/cython "$site"/tvm_ffi/include/dlpack/*.md "$site"/tornado/test
# nor its C headers and its dlpack and libbacktrace sources (for building C++ extensions; TVM reads them only
# when it exports a library holding a C source module, which no kernel here does: TVM's own headers are left
# out below too): 0.64 MB of the carry limit. Its testing library stays: the ffi's core module links it.
rm -rf "$site"/tvm_ffi/include "$site"/tvm_ffi/3rdparty
find "$site" -name __pycache__ -prune -exec rm -rf {} +
strip --strip-unneeded "$site"/psutil/*.so         # its debug information: 28 KB of the limit
# both archives with xz's x86 filter at -9e: 0.45 MB smaller than tar -J; the working tree grows by each data
# file, and at 5.7 MB of tree the plain archives left it 0.5 MB over the limit
pack() { tar -C "$1" -cf - . | xz -T1 --x86 --lzma2=preset=9e,dict=64MiB > "$2"; }
pack "$site" "$out/site.tar.xz"
rm -rf "$out"/apache_tvm_ffi-*.whl "$out/extras"
# TVM's own runtime C++ sources (tvm/src, for building minrpc and contrib runtimes elsewhere) are not used here:
# without them the tree and the bundle stay under the carry limit as the tree grows
# nor are its C headers, topi's test helpers and the cutlass and hexagon contribs (imported by nothing here);
# the compiler library is recompressed with xz's x86 branch filter, -9e and a dictionary that holds all of it
# (one thread, ~4 minutes): 1.65 MB smaller than plain -9e, which leaves room for a held-out batch's cubins
# (.heldout/SEED.tar.xz, ~0.7 MB) in the same call
py=$(mktemp -d); tar -C "$py" -xJf "$out/tvm-py.tar.xz"
rm -rf "$py/tvm/src" "$py/tvm/include" "$py/tvm/topi/testing" "$py/tvm/contrib/cutlass" "$py/tvm/contrib/hexagon"
# nor TVM's test helpers and benchmarks, its CMake files and license texts (imported or read by nothing here)
rm -rf "$py/tvm/testing" "$py/tvm/s_tir/meta_schedule/testing" "$py/tvm/relax/testing" \
  "$py/tvm/s_tir/dlight/benchmark" "$py/tvm/cmake" "$py/tvm/licenses"
xz -dc "$out/libtvm_compiler.so.xz" | xz -T1 --x86 --lzma2=preset=9e,dict=192MiB > "$out/libtvm_compiler.so.xz.9e"
mv "$out/libtvm_compiler.so.xz.9e" "$out/libtvm_compiler.so.xz"
pack "$py" "$out/tvm-py.tar.xz"; rm -rf "$py"
cp bench/install_tvm.sh "$out/install.sh"        # in place of make-tvm-bundle.sh's (which pip-installs the ffi wheel)
touch "$out/.done-extras-$TVM_VERSION-$TVM_FFI_VERSION"
du -sh "$out"
