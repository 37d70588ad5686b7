"""The simulator: the tile trace, the exact counts, the interpreter's results, and the hardware data."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from kernels import traffic
from kernels.knobs import KnobError, PRESET_NAMES, knobs_text, preset, random_valid, resolve
from kernels.ops import OPS

TINY = {
    "gemm": [dict(M=8, N=8, K=8), dict(M=10, N=7, K=5), dict(M=1, N=1, K=2)],
    "conv1d": [dict(M=16, N=4), dict(M=13, N=5), dict(M=1, N=1)],
    "dwconv2d": [dict(B=1, C=2, H=8, W=8, K=3), dict(B=2, C=3, H=5, W=7, K=3)],
    "dwsep_conv2d": [dict(B=1, C=2, H=8, W=8, K=3, F=2), dict(B=2, C=3, H=5, W=6, K=3, F=5)],
}
CASES = [(op, s) for op, ss in TINY.items() for s in ss]


def _trace_totals(tr):
    return Counter((r.tensor, r.level, r.kind) for r in tr.records if r.kind != "barrier")


def _count_totals(c):
    return Counter({(t, lvl, k): n for t, lv in c.per_tensor.items() for lvl, d in lv.items()
                    for k, n in d.items() if n})


def _random_settings(n_per_case: int, seed: int):
    rng = np.random.default_rng(seed)
    for op, s in CASES:
        for target in ("cuda", "cpu"):
            for _ in range(n_per_case):
                k = random_valid(op, target, s, rng)
                if k is not None:
                    yield op, s, target, k


@pytest.mark.parametrize("op,s,target,k", list(_random_settings(2, 11)),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_trace_totals_equal_exact_counts(op, s, target, k):
    assert _trace_totals(traffic.trace(op, s, k, target)) == \
        _count_totals(traffic.counts(op, s, k, target, machine=False))


@pytest.mark.slow
def test_trace_totals_equal_exact_counts_over_many_random_settings():
    tried = 0
    for op, s, target, k in _random_settings(13, 12345):
        assert _trace_totals(traffic.trace(op, s, k, target)) == \
            _count_totals(traffic.counts(op, s, k, target, machine=False)), (op, s, target, knobs_text(k))
        tried += 1
    assert tried >= 200


@pytest.mark.parametrize("op,s,target,k", list(_random_settings(2, 7)), ids=lambda v: v if isinstance(v, str) else None)
def test_interpreted_kernel_matches_the_float64_reference(op, s, target, k):
    """CUDA schedules are checked here without a GPU: the interpreter runs the lowered kernel thread by
    thread, barriers in order, and flags races between blocks and out-of-bounds accesses."""
    assert traffic.simulate(op, s, k, target, seed=3) < 1e-9


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("target", ["cuda", "cpu"])
@pytest.mark.parametrize("name", PRESET_NAMES)
def test_every_preset_traces_on_its_drawable_tile(op, target, name):
    s, k = traffic.tiny(op, preset(op, target, name, OPS[op].sizes["speed test"]), target)
    tr = traffic.trace(op, s, k, target)
    assert tr.records and [r.step for r in tr.records] == list(range(len(tr.records)))
    assert traffic.simulate(op, s, k, target) < 1e-9


def test_shared_schedule_trace_has_cooperative_fill_then_barrier_then_reads():
    s, k = traffic.tiny("gemm", preset("gemm", "cuda", "best", OPS["gemm"].sizes["speed test"]), "cuda")
    recs = traffic.trace("gemm", s, k, "cuda").records
    first_write = next(i for i, r in enumerate(recs) if r.level == "shared" and r.kind == "write")
    barrier = next(i for i, r in enumerate(recs) if i > first_write and r.kind == "barrier")
    fill = recs[first_write:barrier]
    assert len({r.thread for r in fill if r.level == "shared" and r.kind == "write"}) > 1   # many threads fill
    after = recs[barrier + 1:]
    assert any(r.level == "shared" and r.kind == "read" for r in after)
    assert all(r.phase > recs[first_write].phase for r in after)


def test_register_schedule_reads_a_from_global_once_per_thread_and_k_tile():
    s, k = traffic.tiny("gemm", preset("gemm", "cuda", "seed", OPS["gemm"].sizes["speed test"]), "cuda")
    recs = traffic.trace("gemm", s, k, "cuda").records
    per = Counter((r.block, r.thread, r.index) for r in recs if r.tensor == "A" and r.level == "global")
    assert set(per.values()) == {1}
    assert not any(r.level == "shared" for r in recs)


def test_tiny_keeps_threads_sharing_a_block_for_the_seed_tiles():
    s, k = traffic.tiny("gemm", preset("gemm", "cuda", "seed", OPS["gemm"].sizes["speed test"]), "cuda")
    assert s == {"M": 8, "N": 8, "K": 8}
    assert (k.tile_m // k.patch_m) * (k.tile_n // k.patch_n) > 1


def test_trace_fails_when_the_shape_is_too_big_to_draw():
    k = preset("gemm", "cuda", "seed", {"M": 1024, "N": 1024, "K": 1024})
    with pytest.raises(KnobError, match="drawable tile allows at most"):
        traffic.trace("gemm", {"M": 1024, "N": 1024, "K": 1024}, k, "cuda")


def test_counts_of_the_notes_gemm_kernels_follow_the_loop_nest():
    """TVM_0.27_NOTES.md's 1024^3 readings: 16 777 216 global loads for the register kernel (8 per thread per k
    x K x 65 536 threads / 32) and 4 194 304 shared loads for shared + registers (128-bit merged)."""
    s = {"M": 1024, "N": 1024, "K": 1024}
    seed = traffic.counts("gemm", s, preset("gemm", "cuda", "seed", s), "cuda").ncu
    assert seed["smsp__inst_executed_op_global_ld.sum"] == 16_777_216
    shared = traffic.counts("gemm", s, resolve("gemm", "cuda", s, "seed", "cache_a=shared+local,cache_b=shared+local,"
                                                                       "vector=1"), "cuda").ncu
    assert shared["smsp__inst_executed_op_shared_ld.sum"] == 4_194_304
    assert shared["smsp__inst_executed_op_global_ld.sum"] == 1_048_576


@pytest.mark.parametrize("n", [1536, pytest.param(4096, marks=pytest.mark.slow)])     # 4096: the Lab's "large", ~70 s
def test_full_size_element_counts_follow_from_the_loop_nest(n):
    s = {"M": n, "N": n, "K": n}
    c = traffic.counts("gemm", s, preset("gemm", "cuda", "naive", s), "cuda")
    assert c.per_tensor["A"]["global"]["read"] == n ** 3
    assert c.per_tensor["C"]["global"]["write"] == n ** 3 + n ** 2        # init, then every k
    assert c.flops == 2 * n ** 3


def test_cpu_counts_have_no_nsight_metrics():
    s = {"M": 64, "N": 64, "K": 64}
    assert traffic.counts("gemm", s, preset("gemm", "cpu", "best", s), "cpu").ncu == {}


def test_traffic_command_prints_the_recorded_seed_gemm_counters():
    import pandas as pd
    rec = pd.read_csv("data/ncu_h200.csv")
    row = rec[(rec.op == "gemm") & (rec.preset == "seed") & (rec.overrides.isna())].iloc[0]
    out = subprocess.run([sys.executable, "-m", "kernels", "traffic", "--op", "gemm", "--shape",
                          "M=1024,N=1024,K=1024", "--target", "cuda", "--preset", "seed", "--json"],
                         capture_output=True, text=True, check=True)
    ncu = json.loads(out.stdout)["ncu"]
    for m, v in ncu.items():
        if m in row and not pd.isna(row[m]):        # local memory was not recorded for this kernel
            assert v == int(row[m]), m
