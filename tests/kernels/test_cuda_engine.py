"""The CUDA engine's pipelined fills: what the knobs ask for is in the generated code, and the interpreted
kernel (the same lowered TensorIR) computes the reference result, remainders included."""
from __future__ import annotations

import re

import pytest

from kernels import build, traffic
from kernels.knobs import resolve

PIPE = "tile_m=32,tile_n=32,patch_m=4,patch_n=4,k_split=8,cache_a=shared+local,cache_b=shared+local,vector=4," \
       "unroll=4096,pipeline=true"


@pytest.mark.parametrize("stages", [2, 3])
def test_async_copy_emits_cp_async_into_stage_buffers(stages):
    s = {"M": 64, "N": 64, "K": 64}
    src = build.source("gemm", s, resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages}"),
                       "cuda", "cuda")
    assert "cp_async" in src and "cp_async_wait_group" in src
    sizes = {int(n) for n in re.findall(r"__shared__ alignas\(\d+\) float [AB]_shared_ptr\[(\d+)\]", src)}
    assert sizes == {stages * 32 * 8}                  # `stages` copies of a 32 x 8 tile of A and of B


def test_plain_pipeline_has_no_cp_async():
    s = {"M": 64, "N": 64, "K": 64}
    assert "cp_async" not in build.source("gemm", s, resolve("gemm", "cuda", s, None, PIPE), "cuda", "cuda")


@pytest.mark.parametrize("stages", [2, 3])
def test_async_pipeline_computes_the_reference_where_tiles_do_not_divide(stages):
    s = {"M": 40, "N": 36, "K": 28}
    k = resolve("gemm", "cuda", s, None, f"{PIPE},async_copy=true,stages={stages}")
    assert traffic.simulate("gemm", s, k, "cuda") < 1e-4
