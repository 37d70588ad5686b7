"""Every CPU preset of every operator against the float64 reference, on the course's shapes.

The default run takes a sample that still holds size-1 axes and sizes no tile divides; the full course
products (and the slow baseline x large-shape pairs) run with `-m slow`.
"""
from __future__ import annotations

import numpy as np
import pytest
import tvm

from bench.shapes import course_shapes
from kernels import build, lowering
from kernels.ops import OPS
from kernels.schedules import create
from kernels.knobs import PRESET_NAMES, random_valid, resolve

TOLERANCE = 1e-4

SAMPLE = {
    "gemm": [dict(M=1, N=1, K=2), dict(M=1, N=1024, K=1024), dict(M=10, N=1024, K=1024),
             dict(M=1024, N=10, K=1024), dict(M=1024, N=100, K=1024), dict(M=1024, N=1024, K=1),
             dict(M=1024, N=1024, K=10)],
    "conv1d": [dict(M=1, N=1), dict(M=1, N=1024), dict(M=1024, N=1), dict(M=10, N=1024), dict(M=1024, N=100),
               dict(M=1000, N=1024), dict(M=1024, N=1024), dict(M=10000, N=1024)],
    # every value of every axis at least once; B, C, H, W, K
    "dwconv2d": [dict(B=1, C=1, H=1, W=1, K=1), dict(B=2, C=3, H=3, W=4, K=3), dict(B=3, C=4, H=4, W=3, K=5),
                 dict(B=4, C=64, H=1, W=128, K=3), dict(B=5, C=1, H=128, W=1, K=5), dict(B=11, C=3, H=4, W=128, K=1),
                 dict(B=32, C=4, H=128, W=3, K=3), dict(B=1, C=64, H=128, W=128, K=5)],
    "dwsep_conv2d": [dict(B=1, C=1, H=1, W=1, K=1, F=1), dict(B=3, C=3, H=4, W=3, K=5, F=5),
                     dict(B=1, C=64, H=1, W=128, K=3, F=1), dict(B=3, C=1, H=128, W=3, K=3, F=64),
                     dict(B=32, C=3, H=4, W=128, K=1, F=5), dict(B=1, C=64, H=128, W=128, K=3, F=64)],
}
ODD = {"gemm": dict(M=13, N=37, K=19), "conv1d": dict(M=37, N=11), "dwconv2d": dict(B=2, C=3, H=13, W=37, K=3),
       "dwsep_conv2d": dict(B=2, C=5, H=7, W=37, K=3, F=6)}


def _label(s: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in s.items())


def _slow_pair(op: str, s: dict, preset: str) -> bool:
    """The plain loop nests on the biggest course shapes take seconds each: those run with -m slow."""
    work = int(np.prod(list(s.values())))
    return preset in ("baseline", "naive") and work > (2e9 if op == "gemm" else 2e8)


def _cases(slow: bool):
    for op in SAMPLE:
        shapes = course_shapes(op) if slow else SAMPLE[op]
        for s in shapes:
            for p in PRESET_NAMES:
                if slow == (s not in SAMPLE[op] or _slow_pair(op, s, p)):
                    yield pytest.param(op, s, p, id=f"{op}-{p}-{_label(s)}")


def _check(op: str, s: dict, knobs) -> None:
    rel, _, _ = build.verify(op, s, knobs, "cpu", rng=np.random.default_rng(0))
    assert rel < TOLERANCE, f"{op} {_label(s)} with {knobs}: relative error {rel:.3g}"


@pytest.mark.parametrize("op,shape,preset", list(_cases(slow=False)))
def test_preset_matches_reference(op, shape, preset):
    _check(op, shape, resolve(op, "cpu", shape, preset))


@pytest.mark.slow
@pytest.mark.parametrize("op,shape,preset", list(_cases(slow=True)))
def test_preset_matches_reference_full_course(op, shape, preset):
    _check(op, shape, resolve(op, "cpu", shape, preset))


def _random_knobs(op: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        k = random_valid(op, "cpu", ODD[op], rng)
        if k is not None and k not in out:
            out.append(k)
    return out


@pytest.mark.parametrize("op", list(ODD))
def test_random_knobs_match_reference(op):
    for k in _random_knobs(op, 4, seed=1):
        _check(op, ODD[op], k)


@pytest.mark.slow
@pytest.mark.parametrize("op", list(ODD))
def test_many_random_knobs_match_reference(op):
    for k in _random_knobs(op, 60, seed=2):
        _check(op, ODD[op], k)


def _in_bounds(op: str, s: dict, knobs) -> None:
    """Compiled with TVM's bound checkers: an access outside any buffer raises instead of corrupting memory."""
    sch, _ = create(op, s, knobs, "cpu")
    with tvm.transform.PassContext(opt_level=3, config={"tirx.instrument_bound_checkers": True}):
        mod = tvm.compile(sch.mod, target=lowering.tvm_target("cpu")).jit()
    o, dev = OPS[op], tvm.cpu(0)
    xs = o.random_inputs(s, np.random.default_rng(0))
    out = tvm.runtime.tensor(np.full(o.output_shape(s), np.nan, "float32"), dev)
    mod["main"](*[tvm.runtime.tensor(x, dev) for x in xs], out)
    rel = np.linalg.norm(out.numpy() - o.reference(*xs)) / max(np.linalg.norm(o.reference(*xs)), 1e-30)
    assert rel < TOLERANCE, f"{op} {_label(s)} with {knobs}: relative error {rel:.3g}"


@pytest.mark.parametrize("op", list(ODD))
def test_random_knobs_stay_in_bounds(op):
    for k in _random_knobs(op, 3, seed=3):
        _in_bounds(op, ODD[op], k)


@pytest.mark.slow
@pytest.mark.parametrize("op", list(ODD))
def test_many_random_knobs_stay_in_bounds(op):
    for k in _random_knobs(op, 40, seed=4):
        _in_bounds(op, ODD[op], k)


RAGGED = {"M": 70, "N": 45, "K": 37}        # no tile, patch or k tile below divides M, N or K


@pytest.mark.parametrize("knobs", [
    "order=k_outer,cache_b=packed,cache_c=local",
    "order=k_outer,cache_b=global,cache_c=local,unroll=64",
    "order=k_inner,cache_b=global,cache_c=local",
    "order=k_inner,cache_b=packed,cache_c=global,parallel=false",
    "order=plain,cache_b=global,cache_c=global,vector=1",
])
def test_cpu_pad_tiles_computes_the_reference_in_bounds_where_m_n_and_k_do_not_divide(knobs):
    k = resolve("gemm", "cpu", RAGGED, None, f"tile_m=32,tile_n=32,patch_m=4,patch_n=16,k_split=16,{knobs},"
                                             "pad_tiles=true")
    assert k.pad_tiles
    _check("gemm", RAGGED, k)
    _in_bounds("gemm", RAGGED, k)


def test_cpu_pad_tiles_leaves_no_bounds_test_in_the_multiply_add():
    """Without the knob the tile remainders put a test (T.where) on the update of every patch lane; with it the
    only tests are in the padded copies of A and B and in the write-back of the real outputs."""
    text = "tile_m=32,tile_n=32,patch_m=4,patch_n=16,k_split=16,order=k_outer,cache_b=global,cache_c=local"
    for pad in (False, True):
        sch, steps = create("gemm", RAGGED, resolve("gemm", "cpu", RAGGED, None, f"{text},pad_tiles={pad}"), "cpu")
        src = sch.mod.script()
        update = src[src.index('T.sblock("C_update")'):]
        update = update[:update.index("C_pad_local[v_i, v_j] +" if pad else "C_local[v_i, v_j] +")]
        assert ("T.where" in update) != pad
        assert any("pad the output up to whole block tiles (96 x 64 x 48" in s for s in steps.lines) == pad


def test_cpu_best_pads_ragged_gemm_and_splits_k_into_equal_tiles():
    """best at a held-out shape of the first CPU suite (data/cpu_suite.json of 2026-12-04, in git history), where
    1152x415x390 ran at 0.04x numpy unpadded: K=390 in two k tiles of 195 (no padding of K at all), N padded to
    whole 64-wide tiles; at 1024^3 nothing is padded."""
    k = resolve("gemm", "cpu", {"M": 1152, "N": 415, "K": 390}, "best")
    assert k.pad_tiles and k.k_split == 195 and k.tile_n == 64
    assert resolve("gemm", "cpu", {"M": 1024, "N": 1024, "K": 1000}, "best").k_split == 250
    assert not resolve("gemm", "cpu", {"M": 1024, "N": 1024, "K": 1024}, "best").pad_tiles
    # tiles of equal size in whole patches (M) and vectors (N): N=95 in two tiles of 48, not 64 + 64 (padding 33)
    k = resolve("gemm", "cpu", {"M": 327, "N": 95, "K": 382}, "best")
    assert (k.tile_m, k.patch_m, k.tile_n, k.patch_n, k.k_split, k.vector) == (56, 4, 48, 48, 191, 16)
    _check("gemm", {"M": 327, "N": 95, "K": 382}, k)


def test_cpu_best_takes_k_tiles_that_divide_k_where_the_data_measured_them_faster():
    """data/cpu_gemm_k_tiles.json (run with the rule before): at each of its seven shapes the variant `divides` is
    the k_split best takes today, and it beat the padded k tiles in every round; where M and N divide the tiles,
    nothing is padded now (no copies of A and B). The kernel at such a shape still computes the reference."""
    import json
    from pathlib import Path
    d = json.loads((Path(__file__).resolve().parents[2] / "data" / "cpu_gemm_k_tiles.json").read_text())
    assert d["device"] and d["date"] and d["command"].endswith("cpu_gemm_k_tiles.toml") and len(d["steps"]) == 7
    for st in d["steps"]:
        row = st["output"]["shapes"][0]
        s = dict(zip("MNK", map(int, st["each"]["shape"].split("x"))))
        k = resolve("gemm", "cpu", s, "best")
        assert k.k_split == int(st["each"]["k"]) and s["K"] % k.k_split == 0, s
        assert k.pad_tiles == bool(s["M"] % k.tile_m or s["N"] % k.tile_n), s
        assert min(b / v for b, v in zip(row["best_ms"], row["variant"]["ms"])) > 1.0, s
        assert row["ok"] and row["variant"]["ok"] and row["variant"]["rel_err"] < 1e-4, s
    s = {"M": 64, "N": 32, "K": 261}                   # 261 = 9 x 29: three k tiles of 87 where 256 asked for two
    k = resolve("gemm", "cpu", s, "best")
    assert k.k_split == 87 and not k.pad_tiles
    _check("gemm", s, k)


@pytest.mark.parametrize("shape,peeled", [
    (dict(M=5000, N=18), (16, 9)),      # 5017 outputs: 39 whole patches of 128, then one whole vector and 9 lanes
    (dict(M=6000, N=9), (112, 8)),      # 6008: 46 whole patches, then 7 whole vectors and 8 lanes
    (dict(M=1024, N=1024), (0, 15)),    # 2047: the 127 left over are 6% of the output, so only the lanes peel
])
def test_conv1d_peels_down_to_whole_register_patches(shape, peeled):
    """conv1d's one output axis is peeled down to whole register patches where what is left is under 2.5% of
    the output: the patch update then has no bounds test inside it (a test per patch, outside, remains), and
    the outputs left over are computed right, in bounds, in their own loop nests."""
    k = resolve("conv1d", "cpu", shape, "best")
    assert (k.patch, k.vector) == (128, 16)
    sch, steps = create("conv1d", shape, k, "cpu")
    ext = shape["M"] + shape["N"] - 1
    vectors, lanes = peeled
    line = next(s for s in steps.lines if s.startswith("peel the last"))
    assert line.startswith(f"peel the last {vectors + lanes} of {ext} contiguous outputs"), line
    src = sch.mod.script()
    update = src[src.index('T.sblock("C_i0_update")'):]
    update = update[:update.index("C[v_i] = C[v_i] +")]
    where = [ln.strip() for ln in update.splitlines() if "T.where" in ln]
    assert len(where) == 1 and ("* 8 +" in where[0]) != bool(vectors), where   # the vector in the patch tested?
    _check("conv1d", shape, k)
    _in_bounds("conv1d", shape, k)


def _plain(o, shape, seed):
    return o.uniform_inputs(shape, np.random.default_rng(seed))


@pytest.mark.parametrize("op,shape,big", [
    ("gemm", dict(M=1, N=1, K=33), dict(M=16, N=16, K=33)),
    ("dwsep_conv2d", dict(B=1, C=8, H=1, W=1, K=3, F=1), dict(B=1, C=8, H=9, W=9, K=3, F=1))])
def test_a_draw_whose_result_nearly_cancels_is_drawn_again_at_small_outputs(op, shape, big):
    """At a handful of outputs a float64 result near zero makes float32 rounding alone fail the 1e-4 check;
    random_inputs draws those again (and only there: a large output takes the first draw as it is). The reductions
    that can cancel are GEMM's over K and the pointwise sum over C; a conv1d output always holds two single
    products (its ends) and a depthwise one at most K*K, so there a 100x cancellation of all outputs is rare."""
    from kernels.ops._base import CANCELLATION, SMALL_OUTPUT
    o = OPS[op]
    seed = next(s for s in range(100000) if o.cancels(_plain(o, shape, s)))
    xs = _plain(o, shape, seed)
    terms = np.linalg.norm(o.reference(*[np.abs(x) for x in xs]))
    assert terms > CANCELLATION * np.linalg.norm(o.reference(*xs))
    drawn = o.random_inputs(shape, np.random.default_rng(seed))
    assert not o.cancels(drawn) and not np.array_equal(drawn[0], xs[0])
    assert np.prod(o.output_shape(big)) > SMALL_OUTPUT
    assert all(np.array_equal(a, b) for a, b in zip(o.random_inputs(big, np.random.default_rng(seed)),
                                                     _plain(o, big, seed)))
