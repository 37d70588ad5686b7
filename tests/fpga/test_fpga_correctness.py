"""The fpga target computes the operators right: build.verify / build.run against the float64 reference on
the course's small shapes (every GEMM M, N, K in {1, 10, 16, 33}, conv1d M, N in {1, 10, 100}), with every
preset and random knobs; larger shapes under -m slow."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from bench.shapes import course_shapes
from kernels import build
from kernels.knobs import PRESET_NAMES, preset, random_valid, validate

SMALL = (1, 10, 16, 33)
GEMMS = [{"M": m, "N": n, "K": k} for m, n, k in itertools.product(SMALL, repeat=3)]
CONVS = [{"M": m, "N": n} for m, n in itertools.product((1, 10, 100), repeat=2)]


def check(op, shape, knobs):
    assert validate(op, "fpga", knobs, shape) == []
    rel, arrays, _ = build.verify(op, shape, knobs, "fpga")
    assert rel < build.TOLERANCE, (op, shape, knobs, rel)
    assert np.isfinite(arrays[-1]).all()


@pytest.mark.parametrize("i,shape", list(enumerate(GEMMS)))
def test_gemm_small_shapes(i, shape):
    check("gemm", shape, preset("gemm", "fpga", PRESET_NAMES[i % 4], shape))


@pytest.mark.parametrize("shape", CONVS)
@pytest.mark.parametrize("name", PRESET_NAMES)
def test_conv1d_small_shapes(shape, name):
    check("conv1d", shape, preset("conv1d", "fpga", name, shape))


@pytest.mark.parametrize("op,shapes", [("gemm", GEMMS[::3]), ("conv1d", CONVS)])
def test_random_knobs(op, shapes):
    """Resident operand, double buffering and tiles drawn at random: remainders and edge tiles everywhere."""
    rng = np.random.default_rng(7)
    for shape in shapes:
        k = random_valid(op, "fpga", shape, rng)
        assert k is not None
        check(op, shape, k)


def test_run_reports_simulated_time_and_error():
    r = build.run("gemm", {"M": 33, "N": 10, "K": 16}, preset("gemm", "fpga", "seed", {"M": 33, "N": 10, "K": 16}),
                  "fpga")
    assert r.ok and r.rel_err < build.TOLERANCE and r.median_ms > 0
    assert "simulated" in r.device and "simulated" in r.ref and r.repeats == 1 and r.ref_ms is None


@pytest.mark.slow
@pytest.mark.parametrize("n", [64, 128, 256])
@pytest.mark.parametrize("name", PRESET_NAMES)
def test_gemm_larger_shapes(n, name):
    shape = {"M": n, "N": n, "K": n}
    check("gemm", shape, preset("gemm", "fpga", name, shape))


@pytest.mark.slow
@pytest.mark.parametrize("resident", ["acc", "inp", "wgt"])
@pytest.mark.parametrize("double", [False, True])
def test_gemm_resident_operands(resident, double):
    from kernels.knobs import resolve
    shape = {"M": 96, "N": 80, "K": 72}
    check("gemm", shape, resolve("gemm", "fpga", shape, None,
                                 f"tile_m=32,tile_n=32,tile_k=32,resident={resident},double_buffer={double}"))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [s for s in course_shapes("conv1d") if s["M"] <= 10000])
def test_conv1d_course_shapes(shape):
    """Every preset, except where the simulator declines (too many instructions: a sentence, no crash)."""
    from kernels.fpga.sim import INSTRUCTION_LIMIT
    from kernels.knobs import KnobError
    for name in PRESET_NAMES:
        k = preset("conv1d", "fpga", name, shape)
        if 3 * int(np.prod([n for _, n in k.layout(shape).counts])) > INSTRUCTION_LIMIT:
            with pytest.raises(KnobError, match="use larger tiles or a smaller shape"):
                build.verify("conv1d", shape, k, "fpga")
            continue
        check("conv1d", shape, k)
