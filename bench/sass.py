"""Dump the SASS of a schedule's CUDA kernel, compiled here with nvcc for sm_90 (needs nvcc and cuobjdump;
Triton's wheel carries a cuobjdump: set CUOBJDUMP). Counting memory instructions in the SASS is how the
compiler effects in kernels/_count.py were read off.

    python -m bench.sass --op gemm --shape M=1024,N=1024,K=1024 --preset naive [--knobs ..] [--grep LDG]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile

from kernels import build
from kernels.knobs import parse_shape, resolve


def sass(op: str, shape: dict, knobs) -> str:
    src = build.source(op, shape, knobs, "cuda", "cuda")
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = os.path.join(d, "k.cu"), os.path.join(d, "k.cubin")
        open(cu, "w").write(src)
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-Xptxas=--register-usage-level=10", cu, "-o", cubin],
                       check=True, capture_output=True)
        return subprocess.run([os.environ.get("CUOBJDUMP", "cuobjdump"), "-sass", cubin], check=True,
                              capture_output=True, text=True).stdout


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--op", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--preset")
    p.add_argument("--knobs")
    p.add_argument("--grep", help="only lines matching this regex, e.g. 'LDG|STG|LDS|STS|BRA|BAR'")
    a = p.parse_args()
    s = parse_shape(a.op, a.shape)
    out = sass(a.op, s, resolve(a.op, "cuda", s, a.preset, a.knobs))
    for line in out.splitlines():
        if not a.grep or re.search(a.grep, line):
            print(line)


if __name__ == "__main__":
    main()
