"""Shape guards: past 32-bit indices, or past the memory a run would need, one sentence with a shape that fits."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kernels import limits
from kernels.knobs import KnobError, parse_shape


def _shape_in(sentence: str) -> str:
    return re.search(r"e\.g\. (\S+)\.$", sentence).group(1)


@pytest.mark.parametrize("cmd", ["run", "traffic", "source"])
def test_a_shape_past_32_bit_indices_fails_with_a_shape_that_fits_on_every_command(cmd):
    out = subprocess.run([sys.executable, "-m", "kernels", cmd, "--op", "gemm", "--shape", "M=100000,N=100000,K=100000",
                          "--target", "cuda"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    line, = out.stderr.strip().splitlines()
    assert "32-bit indices" in line
    parse_shape("gemm", _shape_in(line))            # the suggested shape is accepted


@pytest.mark.parametrize("op, text", [("conv1d", "M=3000000000,N=3"), ("dwconv2d", "B=64,C=512,H=512,W=512,K=3"),
                                      ("dwsep_conv2d", "B=1,C=1,H=50000,W=50000,K=3,F=1")])
def test_every_operator_checks_its_largest_tensor(op, text):
    with pytest.raises(KnobError, match="32-bit indices") as e:
        parse_shape(op, text)
    assert max(limits._elements(op, parse_shape(op, _shape_in(e.value.problems[0]))).values()) <= limits.INDEX_LIMIT


def test_a_run_that_would_not_fit_in_host_memory_says_how_much_it_needs(monkeypatch):
    monkeypatch.setattr(limits, "host_bytes", lambda: 2 ** 30)
    s = parse_shape("conv1d", "M=500000000,N=3")
    msg, = limits.memory_problems("conv1d", s, "cpu")
    assert "GiB of host memory" in msg and "1.0 GiB free" in msg
    assert not limits.memory_problems("conv1d", parse_shape("conv1d", _shape_in(msg)), "cpu")


def test_a_run_that_would_not_fit_on_the_gpu_says_so(monkeypatch):
    monkeypatch.setattr(limits, "host_bytes", lambda: 2 ** 40)
    s = parse_shape("gemm", "M=40000,N=40000,K=40000")
    msg, = limits.memory_problems("gemm", s, "cuda", device_bytes=2 ** 32)
    assert "on the GPU" in msg and not limits.memory_problems("gemm", parse_shape("gemm", _shape_in(msg)), "cuda",
                                                               device_bytes=2 ** 32)
