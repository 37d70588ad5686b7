"""data/machine_counts.json: the machine's counts shipped for the views a visitor opens first are current (the
cubin compiled here and the emulator as it is now) and are what emulating gives; anything else is counted."""
from __future__ import annotations

import json

import pytest

from kernels import sass
from kernels.knobs import fitted
from kernels.sass import shipped

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
