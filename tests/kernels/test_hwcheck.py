"""The simulator's predictions against the Nsight Compute counters recorded on the H200.

The promise: global load/store instructions and global load sectors exact where the tiles divide the shape,
within 2% otherwise; shared-memory instructions within 2%. The kernel-metric pairs the model does not yet
reproduce are listed below with the reason, each an expected failure that turns into an error once fixed.
"""
from __future__ import annotations

import functools

import pytest

from kernels import hwcheck

KNOWN = {
    # A 10-iteration loop with a row branch: nvcc issues the kernel loads of both branch arms.
    ("dwsep_conv2d", '{"B": 1, "C": 5, "H": 128, "W": 128, "K": 3, "F": 8}', "best", "cache_d=shared"):
        "loads duplicated into both arms of a row branch",
    # Remainder tests in a fully unrolled k tile: warps with no row in range skip the whole write-back (the
    # model issues it predicated), and nvcc merges fewer guarded shared loads than modelled.
    ("gemm", '{"M": 100, "N": 100, "K": 100}', "best"): "write-back skipped by warps with no row in range",
    # One store instruction of 40: the last block's inactive warp skips one write-back.
    ("conv1d", '{"M": 1000, "N": 100}', "seed"): "one write-back skipped by an inactive warp",
    # Pass-4 kernels profiled to calibrate the model (not shipped): 3 stages with remainders merge 2.7% more
    # shared loads; at 2^20 the signal windows' sectors are not predicted (null: every lane would have to be
    # visited), and with taps in shared memory nvcc predicates the fill, so all 4 warps issue it (modelled: 2).
    ("gemm", '{"M": 1000, "N": 1024, "K": 1000}', "", "stages=3"): "shared loads merged across remainder tests",
    ("conv1d", '{"M": 1048576, "N": 1024}', "", "tile=2048,patch=16,k_split=64,cache_a=local"):
        "sectors of long predicated windows not predicted",
    ("conv1d", '{"M": 1048576, "N": 1024}', "", "tile=1024,patch=8,k_split=64,cache_a=local"):
        "sectors of long predicated windows not predicted",
    ("conv1d", '{"M": 1048576, "N": 1024}', "", "cache_w=shared"): "predicated tap fill; sectors not predicted",
}


@functools.lru_cache(maxsize=1)
def table():
    return hwcheck.compare()


def _rows():
    t = hwcheck.recorded()
    return [(r.op, r.shape, r.preset if isinstance(r.preset, str) else "",
             r.overrides if isinstance(r.overrides, str) else "") for r in t.itertuples()]


def test_the_recorded_table_covers_four_operators_and_twenty_kernels():
    t = hwcheck.recorded()
    assert set(t.op) == {"gemm", "conv1d", "dwconv2d", "dwsep_conv2d"}
    assert len(t) >= 20
    assert set(t.device) == {"NVIDIA H200"} and t.date.notna().all() and t.command.notna().all()


@pytest.mark.parametrize("op,shape,preset,overrides", _rows(), ids=lambda v: str(v)[:40])
def test_prediction_agrees_with_nsight_compute(op, shape, preset, overrides):
    t = table()
    rows = t[(t["op"] == op) & (t["shape"] == shape) & (t["preset"] == preset) & (t["overrides"] == overrides)]
    assert len(rows) == len(hwcheck.METRICS)
    bad = rows[~rows.within]
    reason = next((why for key, why in KNOWN.items() if key[:3] == (op, shape, preset)
                   and (len(key) == 3 or key[3] in overrides)), None)
    if reason:
        if bad.empty:
            pytest.fail(f"{(op, shape, preset, overrides)} now agrees: remove it from KNOWN")
        pytest.xfail(reason)
    assert bad.empty, bad[["metric", "measured", "predicted", "rel_diff", "allowed"]].to_string()
