"""The Walkthrough page through streamlit.testing: every step, the recorded times, the level verdict."""
import json
import shutil

import pytest

from pages_app import ROOT, no_failures, open_page


@pytest.fixture
def walk(tmp_path, monkeypatch):
    return open_page("walkthrough", tmp_path, monkeypatch)


def _measured(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Measured."))


def _verdict(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**On the "))


@pytest.mark.parametrize("step", [0, 1, 2, 3, 4])
def test_every_step_shows_its_tile_counts_and_times(walk, step):
    walk.button_group(key="step").set_value(step).run()
    no_failures(walk)
    assert not walk.error, [e.value for e in walk.error]
    assert any(s.value.startswith(f"Step {step}") or (step == 0 and "baseline" in s.value) for s in walk.subheader)
    assert len(walk.get("plotly_chart")) >= 4           # tile, counts, times, levels
    assert len(walk.get("download_button")) >= 4        # each chart as standalone HTML


def test_recorded_steps_say_their_time_and_missing_shapes_say_so(walk):
    walk.button_group(key="step").set_value(2).run()
    text = _measured(walk)                                # walk-2 and walk-1 were timed on the H200 at 1024^3
    assert "M=N=K=1024 step 2 ran in" in text and "faster than step 1" in text
    assert "No run is recorded at M=N=K=4096" in text     # ... and not at 4096^3: said, not invented


def test_the_level_verdict_comes_from_the_numbers(tmp_path, monkeypatch, walk):
    before = _verdict(walk)
    assert "shared memory beat registers for GEMM" in before
    data = tmp_path / "data"
    data.mkdir()
    doc = json.load(open(ROOT / "data" / "h200_bench.json"))
    for row in doc["rows"]:                               # make registers win everywhere
        runs = row["runs"]
        if "seed-local" in runs:
            runs["seed-local"]["median_ms"] = min(r["median_ms"] for r in runs.values() if "median_ms" in r) / 2
    json.dump(doc, open(data / "h200_bench.json", "w"))
    shutil.copy(ROOT / "data" / "h200_ceilings.json", data)
    monkeypatch.setenv("KERNEL_LAB_DATA", str(data))
    walk.run()
    no_failures(walk)
    after = _verdict(walk)
    assert after != before and "registers beat shared memory for GEMM" in after and "agrees with the seed" in after


def test_the_cpu_progression_is_timed_live_behind_the_button(walk):
    walk.button_group(key="walk_cpu_shape").set_value("M=N=K=256 (seconds)").run()
    assert not any("baseline →" in m.value and "x**" in m.value for m in walk.markdown)
    walk.button(key="walk_cpu_run").click().run()
    no_failures(walk)
    line = next(m.value for m in walk.markdown if m.value.startswith("On ") and "M=N=K=256" in m.value)
    assert "baseline" in line and "best" in line and "x**" in line
    from kernels import results
    assert {"baseline", "seed", "best"} <= set(results.load()["preset"])
