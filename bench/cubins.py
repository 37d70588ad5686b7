"""Compile kernels exactly as TVM does on the GPU machine (NVRTC, TVM's ptxas options) and write the cubins,
so their SASS can be read anywhere with cuobjdump: python3 -m bench.cubins OUT_DIR. The kernels are the
recorded ones whose counters the simulator does not yet reproduce (tests/kernels/test_hwcheck.py KNOWN)."""
from __future__ import annotations

import json
import os
import sys

KERNELS = {
    "dwsep_b1c5_shared": ("dwsep_conv2d", {"B": 1, "C": 5, "H": 128, "W": 128, "K": 3, "F": 8}, "best", "cache_d=shared"),
    "gemm_1000_3stage": ("gemm", {"M": 1000, "N": 1024, "K": 1000}, None,
                         "tile_m=64,tile_n=64,patch_m=4,patch_n=4,k_split=16,pipeline=true,async_copy=true,stages=3,"
                         "cache_a=shared+local,cache_b=shared+local,vector=4,unroll=4096"),
    "conv1d_2048_taps_shared": ("conv1d", {"M": 1048576, "N": 1024}, None,
                                "tile=2048,patch=16,k_split=64,cache_w=shared,cache_a=local,unroll=4096"),
    "gemm_4096_best": ("gemm", {"M": 4096, "N": 4096, "K": 4096}, "best", None),
}


def main(out: str) -> None:
    from tvm.support.nvcc import compile_cuda
    from kernels import build
    from kernels.knobs import resolve
    for name, (op, shape, preset, knobs) in KERNELS.items():
        src = build.source(op, shape, resolve(op, "cuda", shape, preset, knobs), "cuda", "cuda")
        open(os.path.join(out, f"{name}.cu"), "w").write(src)
        open(os.path.join(out, f"{name}.cubin"), "wb").write(compile_cuda(src, target_format="cubin", arch="sm_90",
                                                                          compiler="nvrtc"))
        print("compiled", name, flush=True)
    json.dump({n: [op, s, p, k] for n, (op, s, p, k) in KERNELS.items()}, open(os.path.join(out, "cubins.json"), "w"))


if __name__ == "__main__":
    main(sys.argv[1])
