"""data/machine/counts.json: the machine's counts shipped for the views a visitor opens first are current (the
cubin compiled here and the emulator as it is now) and are what emulating gives; anything else is counted."""
from __future__ import annotations

import json

import pytest

from kernels import sass
from kernels.knobs import fitted
from kernels.sass import estimate, shipped

REFRESH = "run `python -m bench.machine_counts` to count them again"


def _views():
    out = []
    for k in shipped.entries():
        op, shape, text = json.loads(k)
        out.append((op, shape, fitted(op, "cuda", text, shape)))
    return out


def test_every_view_is_shipped_and_every_entry_is_current():
    from bench.machine_counts import views
    assert {shipped.key(*v) for v in views()} <= set(shipped.entries()), REFRESH
    for op, shape, knobs in _views():
        e = shipped.entries()[shipped.key(op, shape, knobs)]
        assert e["emulator"] == shipped.emulator_hash(), f"the emulator changed since it was counted; {REFRESH}"
        assert e["sass_hash"] == sass.compiled(op, shape, knobs).sass_hash, f"the cubin changed; {REFRESH}"


def _cheapest(n: int = 2):
    return sorted(_views(), key=lambda v: shipped.entries()[shipped.key(*v)]["counts"]["seconds"])[:n]


def test_a_shipped_entry_is_what_emulating_gives():
    for op, shape, knobs in _cheapest():
        fresh = sass._machine_counts(op, tuple(shape.items()), knobs, None)
        got = shipped.lookup(op, shape, knobs, fresh.sass_hash)
        assert got is not None and shipped.to_json(got) | {"seconds": 0} == shipped.to_json(fresh) | {"seconds": 0}


@pytest.mark.slow
def test_every_shipped_entry_is_what_emulating_gives():
    for op, shape, knobs in _views():
        fresh = sass._machine_counts(op, tuple(shape.items()), knobs, None)
        got = shipped.lookup(op, shape, knobs, fresh.sass_hash)
        assert shipped.to_json(got) | {"seconds": 0} == shipped.to_json(fresh) | {"seconds": 0}


def test_machine_counts_takes_a_shipped_entry_only_while_it_holds(monkeypatch):
    op, shape, knobs = _cheapest(1)[0]
    real = sass._machine_counts
    counted = []

    def counting(*a):
        counted.append(a)
        return real(*a)
    monkeypatch.setattr(sass, "_machine_counts", counting)
    monkeypatch.setattr(sass, "_DONE", {})
    m = sass.machine_counts(op, shape, knobs)
    assert not counted and m.ncu == shipped.entries()[shipped.key(op, shape, knobs)]["counts"]["ncu"]
    monkeypatch.setattr(sass, "_DONE", {})
    monkeypatch.setattr(shipped, "emulator_hash", lambda: "another emulator")
    assert sass.machine_counts(op, shape, knobs).ncu == m.ncu and len(counted) == 1
    assert shipped.lookup(op, shape, knobs, m.sass_hash) is None
    assert shipped.lookup(op, {**shape, "M": shape["M"] + 1}, knobs, m.sass_hash) is None


def test_the_emulation_estimate_is_never_far_over_what_emulating_took():
    """On every held-out kernel (data/heldout/batch-*.json records each one's launches and the seconds its
    prediction took) the estimate is at most ESTIMATE_OVER times the time taken: a page's limit on it refuses
    only kernels that would take at least limit / ESTIMATE_OVER."""
    import glob
    import math
    from kernels.ops import OPS
    ratios = []
    for f in glob.glob(str(shipped.PATH.parents[1] / "heldout" / "batch-*.json")):
        emulated = set()
        for e in json.loads(open(f).read())["kernels"]:
            key = (e["op"], json.dumps(e["shape"]), e["knobs"])
            if key in emulated:         # drawn twice in the batch: the 2nd time came from the worker's cache
                continue
            emulated.add(key)
            if e.get("predict_s") and e.get("launches"):
                ls = [(math.prod(ln["grid"]), math.prod(ln["block"])) for ln in e["launches"]]
                ratios.append(estimate.estimate_from(OPS[e["op"]].flops(e["shape"]), ls) / e["predict_s"])
    assert len(ratios) > 700 and max(ratios) <= estimate.ESTIMATE_OVER


def test_a_page_does_not_start_an_emulation_estimated_past_its_limit():
    """The Walkthrough's step 1 at 4096^3 (one thread a block, 64 x 64 x 4096 multiply-adds each): about 11
    minutes estimated, over the pages' 10; the TensorIR counts come, with one sentence for the machine's."""
    from kernels import traffic
    from pages._parts import lab as L
    from pages._parts import walk as W
    shape = dict(W.SIZES["large"])
    k = W.knobs(W.ALL[1], shape)
    assert estimate.estimate_seconds("gemm", shape, k) > L.MACHINE_LIMIT_S
    c = traffic.counts("gemm", shape, k, "cuda", limit_s=L.MACHINE_LIMIT_S)
    assert c.ncu == {} and c.per_tensor["A"]["global"]["read"] == 4096 ** 3
    assert c.machine["error"].startswith("No machine counts for this kernel here: emulating its SASS at this shape")
    assert "a smaller shape" in c.machine["error"]
    small = dict(W.SIZES["speed test"])          # shipped: known, so nothing to estimate
    assert estimate.estimate_seconds("gemm", small, W.knobs(W.ALL[1], small)) == 0.0
