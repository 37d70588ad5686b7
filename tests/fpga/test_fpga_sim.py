"""The simulator: the accelerator's scopes survive lowering, the instruction fast path counts what the
enumeration counts, the cycle model meets its bounds on real kernels, traces agree with the counts."""
from __future__ import annotations

import numpy as np
import pytest

from kernels import build, fpga
from kernels.fpga import _nest, sim
from kernels.fpga.accel import ACC, BUFFER_NAMES, INP, WGT, Accel
from kernels.knobs import KnobError, preset, random_valid, resolve

GEMM = {"M": 64, "N": 64, "K": 64}


def knobs(op, shape, text):
    return resolve(op, "fpga", shape, None, text)


def test_scopes_and_instructions_survive_lowering():
    src = fpga.lowered_source("conv1d", {"M": 100, "N": 32}, preset("conv1d", "fpga", "seed", {"M": 100, "N": 32}))
    for scope in (INP, WGT, ACC):
        assert f'scope="{scope}"' in src
    for kind in ("load", "reset", "gemm", "store"):
        assert f'"pragma_fpga_{kind}"' in src


def test_gemm_counts_follow_the_tiles():
    """Output-stationary 16 x 64 x 64 tiles: A read once, B once per row tile, one core op per 16 x 16 block."""
    r = fpga.simulate("gemm", GEMM, preset("gemm", "fpga", "seed", GEMM))
    a, b, c = r.per_tensor["A"], r.per_tensor["B"], r.per_tensor["C"]
    assert a["global"]["read"] == 64 * 64 and b["global"]["read"] == 64 * 64 * (64 // 16)
    assert c["global"]["write"] == 64 * 64
    assert r.core_ops == 64 * (64 // 16) * (64 // 16) and r.macs == 64 ** 3
    assert b["shared"]["read"] == r.core_ops * 16 * 16            # a 16 x 16 block of B per core op
    assert a["shared"]["read"] == r.core_ops * 16                 # a row of 16 A values per core op
    assert r.per_buffer["DRAM"]["read"] == 4 * (a["global"]["read"] + b["global"]["read"])


@pytest.mark.parametrize("op,shape", [("gemm", {"M": 33, "N": 40, "K": 50}), ("gemm", GEMM),
                                      ("conv1d", {"M": 100, "N": 32}), ("conv1d", {"M": 300, "N": 64})])
def test_fast_path_counts_what_the_enumeration_counts(op, shape, monkeypatch):
    rng = np.random.default_rng(3)
    for k in [preset(op, "fpga", "best", shape)] + [random_valid(op, "fpga", shape, rng) for _ in range(3)]:
        xa, outa, la, pa = sim.execute(op, shape, k)
        with monkeypatch.context() as m:
            m.setattr(_nest.Nest, "_fast", lambda self, *a: None)
            xb, outb, lb, pb = sim.execute(op, shape, k)
        assert sim._instrs(la, pa) == sim._instrs(lb, pb)
        np.testing.assert_allclose(outa, outb, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,shapes", [("gemm", [{"M": 1, "N": 10, "K": 33}, {"M": 33, "N": 16, "K": 10}, GEMM]),
                                       ("conv1d", [{"M": 1, "N": 1}, {"M": 100, "N": 10}, {"M": 10, "N": 100}])])
def test_cycles_never_beat_either_bound(op, shapes):
    rng = np.random.default_rng(11)
    for shape in shapes:
        for k in [preset(op, "fpga", p, shape) for p in ("baseline", "seed", "best")] + \
                 [random_valid(op, "fpga", shape, rng) for _ in range(4)]:
            t = fpga.simulate(op, shape, k).timing
            assert t.cycles >= t.compute_bound and t.cycles >= t.memory_bound
            assert t.cycles <= t.serial_cycles


def test_memory_bound_kernel_reaches_bound_plus_last_compute():
    """One row of A against a 16-wide B: 16 k-steps of 136 load cycles and 1 core op. Double-buffered, the
    DRAM port never waits except while the last core op runs before the store."""
    shape = {"M": 1, "N": 16, "K": 256}
    t = fpga.simulate("gemm", shape, knobs("gemm", shape, "tile_m=1,tile_n=16,tile_k=16,double_buffer=true")).timing
    assert t.memory_bound > t.compute_bound
    assert t.cycles == t.memory_bound + 1 and t.fill_cycles == 1


def test_compute_bound_kernel_reaches_bound_plus_fill():
    """With a 64-byte DRAM port the core is the bottleneck: its core operations and accumulator resets run
    back to back; only the final store (64 x 64 floats / 64 B = 256 cycles) is left after them. Without
    double buffering every load waits for the compute before it."""
    shape, fast = {"M": 64, "N": 64, "K": 256}, Accel(dram_bytes_per_cycle=64)
    k = "tile_m=64,tile_n=64,tile_k=16,double_buffer="
    t = fpga.simulate("gemm", shape, knobs("gemm", shape, k + "true"), accel=fast).timing
    resets, store = 64 * 64 // 16, 64 * 64 * 4 // 64
    assert t.compute_bound > t.memory_bound and t.compute_cycles == t.compute_bound + resets
    assert t.cycles == t.compute_bound + resets + store
    single = fpga.simulate("gemm", shape, knobs("gemm", shape, k + "false"), accel=fast).timing
    assert single.cycles > t.cycles and single.overlap_cycles < t.overlap_cycles


@pytest.mark.parametrize("op", ["gemm", "conv1d"])
def test_trace_totals_equal_level_counts(op):
    from kernels.ops import OPS
    s, k = fpga.tiny(op, preset(op, "fpga", "seed", OPS[op].sizes["speed test"]))
    tr = fpga.trace(op, s, k)
    c = fpga.levels(op, s, k)
    for kind in ("read", "write"):
        got = {lvl: sum(1 for r in tr.records if r.level == lvl and r.kind == kind) for lvl in c.level_totals()}
        assert got == c.level_totals(kind)


@pytest.mark.parametrize("op,shape", [("gemm", {"M": 33, "N": 40, "K": 50}), ("conv1d", {"M": 300, "N": 64}),
                                      ("conv1d", {"M": 100, "N": 10})])
def test_buffers_hold_no_more_than_the_validated_tiles(op, shape):
    rng = np.random.default_rng(5)
    for k in [preset(op, "fpga", "best", shape)] + [random_valid(op, "fpga", shape, rng) for _ in range(4)]:
        r, need = fpga.simulate(op, shape, k), dict(k.layout(shape).floats)
        for scope in (INP, WGT, ACC):
            assert r.peak[BUFFER_NAMES[scope]][0] <= need[scope]


def test_time_is_labelled_simulated():
    r = build.run("conv1d", {"M": 100, "N": 10}, preset("conv1d", "fpga", "best", {"M": 100, "N": 10}), "fpga")
    assert "simulated" in r.device and build.device_name("fpga") == r.device
    b = fpga.time_breakdown("conv1d", {"M": 100, "N": 10}, preset("conv1d", "fpga", "best", {"M": 100, "N": 10}))
    assert b["simulated"] is True and b["ms"] == pytest.approx(r.median_ms)
    assert b["ms"] == pytest.approx(b["load_ms"] + b["compute_ms"] + b["store_ms"] - b["overlap_ms"])


def test_dwconv2d_fails_when_simulated_on_fpga():
    with pytest.raises(KnobError) as e:
        fpga.simulate("dwconv2d", {"B": 1, "C": 2, "H": 8, "W": 8, "K": 3}, None)
    assert "gemm and conv1d" in e.value.problems[0]


def test_simulation_fails_when_too_many_instructions():
    shape = {"M": 1024, "N": 1024, "K": 1024}
    with pytest.raises(KnobError) as e:
        fpga.simulate("gemm", shape, preset("gemm", "fpga", "baseline", shape))
    assert "use larger tiles or a smaller shape" in e.value.problems[0]
