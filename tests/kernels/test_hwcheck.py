"""The simulator's predictions against the Nsight Compute counters recorded on the H200.

The promise: global load/store instructions and global load sectors exact where the tiles divide the shape,
within 2% otherwise; shared-memory instructions within 2%. The kernel-metric pairs the model does not yet
reproduce are listed below with the reason, each an expected failure that turns into an error once fixed.
"""
from __future__ import annotations

import functools

import pytest

from kernels import hwcheck

# Kernel-metric pairs the model does not reproduce yet, each with the reason (an expected failure that turns
# into an error once fixed): {(op, shape, preset[, overrides substring]): reason}.
KNOWN: dict = {
    # (op, shape json, preset[, overrides]) -> why the model still disagrees
    ("gemm", '{"M": 1000, "N": 1000, "K": 1000}', "",
     "patch_m=8,patch_n=8,k_split=16,pipeline=true,async_copy=true,cache_a=shared+local,cache_b=shared+local"):
        "8x8 patches on 64x64 tiles where 64 divides neither M nor N (held out, bench/device_run20.sh and 21, "
        "with and without min_blocks=8: the same counters): shared loads measured 5,502,464, predicted 5,216,768 "
        "(-5.2%), 170.6 per warp and k tile against 161.7. The SASS (NVRTC 13.5 and nvcc 13, the same "
        "structure) has 172 per k tile: 120 + 8 A, 32 B, and 12 predicated-off fence loads, because nvcc splits "
        "the 8 cp.async copies of one commit group, each under its own bound test, into 4 runs (3 predicated A "
        "copies; A's last copy, B's first two, B's last two each behind a branch), where the model sees one run "
        "(3 fence loads). Which copies nvcc branches is not modelled.",
    ("gemm", '{"M": 1000, "N": 1024, "K": 1000}', "best", "stages=3,one_barrier=true"):
        "best's 8x4 patches and k tiles of 32 with 3 stages, 64 dividing neither M nor K (held out, "
        "bench/device_run23.sh): shared loads measured 9,403,264, predicted 9,186,304 (-2.3%, 212 per warp). Not "
        "the merged barrier's doing: the SASS built here has the same 294 shared loads, 8 LDGSTS and branches in "
        "its k loop with one_barrier and without. That loop holds two runs of fence loads (6), the first run "
        "behind a branch, and predicated scalar loads of the A patch under a row test; which of them a warp "
        "executes is not modelled for this kernel (the 2-stage best at 1000^3 is within 1.1%).",
    # transpose_a with tiles that do not divide the shape (held out, bench/device_run30.sh; 4096^3 best matched
    # every counter exactly). The same cause as the two above: more runs of fence loads per k tile than the
    # model's one, in the SASS built here (NVRTC 13.5)
    ("gemm", '{"M": 1000, "N": 1000, "K": 1000}', "best",
     "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,transpose_a=true"):
        "128x128 tiles of 8x8 with A transposed, 128 dividing neither M nor N: shared loads measured 2,413,928, "
        "predicted 2,128,768 (-11.8%). The difference is the fence loads: the k loop's SASS has 4 runs of 3 "
        "(A's first 6 copies behind a branch on the k test, A's last 2 predicated on their row tests, B's two "
        "copies each behind a branch), the prologue one; 512 warps x (1 + 62 x 4 runs, less the run B's last copy "
        "skips in the last tile) x 3 = 380,928 fence loads against the model's 96,768, which with the model's "
        "2,032,000 compute loads is 1,000 (0.04%) from the measurement.",
    ("gemm", '{"M": 1000, "N": 1024, "K": 1000}', "best",
     "tile_m=128,tile_n=128,patch_m=8,patch_n=8,k_split=16,interleave=true,transpose_a=true"):
        "the same tiles with B interleaved, 128 dividing N only: shared loads measured 2,209,008, predicted "
        "2,128,768 (-3.6%); the k loop's SASS has 2 runs of fence loads (A's copies behind a branch on the k "
        "test, then the predicated row-guarded ones), where the model counts one.",
    ("gemm", '{"M": 1024, "N": 1000, "K": 1000}', "best", "transpose_a=true"):
        "the 8x4 tiles with A transposed, 64 dividing M only: shared loads measured 3,360,768, predicted "
        "3,265,536 (-2.8%); the k loop's SASS has 3 runs of fence loads (16 A copies behind a branch on the k "
        "test, one B copy behind a branch, the last 3 predicated) and the prologue 2, where the model counts one "
        "per commit group.",
    # pad_tiles (held out, bench/device_run38.sh): global loads, stores and sectors exact, LDGSTS within 2.4%;
    # what the model does not count is in the SASS built here (NVRTC 13.5): a copy from global that TVM cannot
    # prove in bounds after unrolling is a predicated cp.async plus a store of zeros to shared memory (STS),
    # both executed by every warp that reaches it, and each such copy opens its own run of fence loads (the
    # model counts no shared stores for async copies and one fence run per commit group)
    ("gemm", '{"M": 1000, "N": 1000, "K": 1000}', "best", "pad_tiles=true"):
        "best's 64x64 tiles of 8x4 padded in M and N: shared stores measured 193,536 (256 blocks x 4 warps x 189, "
        "over 32 k tiles with the last cut by the k test), predicted 0; shared loads measured 3,741,552, "
        "predicted 3,219,456 (-14.0%): the extra fence-load runs of the zero-filling copies.",
    ("gemm", '{"M": 2000, "N": 2000, "K": 2000}', "best", "pad_tiles=true"):
        "best's 128x128 tiles of 8x8 padded in M and N: shared stores measured 1,280,000 = 256 blocks x 8 warps "
        "x 125 k tiles x 5 zero-filling copies, predicted 0; shared loads measured 20,228,992, predicted "
        "17,152,000 (-15.2%), their fence-load runs.",
    ("gemm", '{"M": 1000, "N": 1024, "K": 1024}', "best", "pad_tiles=true"):
        "64x64 tiles padded in M only: shared stores measured 65,536 = 256 blocks x 4 warps x 32 k tiles x 2 (the "
        "two of each thread's four A copies at tile rows 32-63, which row 1000 can cut), predicted 0; shared "
        "loads measured 3,443,280, predicted 3,244,032 (-5.8%).",
    ("gemm", '{"M": 1024, "N": 1000, "K": 1024}', "best", "pad_tiles=true"):
        "64x64 tiles padded in N only: shared stores measured 131,072 = 256 blocks x 4 warps x 32 k tiles x 1, "
        "predicted 0; shared loads measured 3,542,016, predicted 3,244,032 (-8.4%).",
}


@functools.lru_cache(maxsize=1)
def table():
    return hwcheck.compare()


def _rows():
    t = hwcheck.recorded()
    return [(r.op, r.shape, r.preset if isinstance(r.preset, str) else "",
             r.overrides if isinstance(r.overrides, str) else "", r.knobs) for r in t.itertuples()]


def test_the_recorded_table_covers_four_operators_and_twenty_kernels():
    t = hwcheck.recorded()
    assert set(t.op) == {"gemm", "conv1d", "dwconv2d", "dwsep_conv2d"}
    assert len(t) >= 20
    assert set(t.device) == {"NVIDIA H200"} and t.date.notna().all() and t.command.notna().all()


# a kernel is its knobs: a preset that changed since (best at 1000^3) gives two rows with the same name
@pytest.mark.parametrize("op,shape,preset,overrides,knobs", _rows(), ids=lambda v: str(v)[:40])
def test_prediction_agrees_with_nsight_compute(op, shape, preset, overrides, knobs):
    t = table()
    rows = t[(t["op"] == op) & (t["shape"] == shape) & (t["preset"] == preset) & (t["overrides"] == overrides)
             & (t["knobs"] == knobs)]
    assert len(rows) == len(hwcheck.METRICS)
    bad = rows[~rows.within]
    reason = next((why for key, why in KNOWN.items() if key[:3] == (op, shape, preset)
                   and (len(key) == 3 or key[3] in overrides or key[3] in knobs)), None)
    if reason:
        if bad.empty:
            pytest.fail(f"{(op, shape, preset, overrides)} now agrees: remove it from KNOWN")
        pytest.xfail(reason)
    assert bad.empty, bad[["metric", "measured", "predicted", "rel_diff", "allowed"]].to_string()
