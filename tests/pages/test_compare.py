"""The Compare page through streamlit.testing: two schedules, their tiles, counts, TensorIR diff and times."""
import pytest

from pages_app import no_failures, open_page


@pytest.fixture
def cmp(tmp_path, monkeypatch):
    return open_page("compare", tmp_path, monkeypatch)


def test_seed_against_best_on_cuda_uses_the_recorded_runs(cmp):
    no_failures(cmp)
    assert len(cmp.get("plotly_chart")) == 2              # the paired tiles and the counts
    diff = next(c.value for c in cmp.code if c.value.startswith("--- A: seed"))
    assert "+++ B: best" in diff and "shared" in diff
    metrics = {m.label: m.value for m in cmp.metric}
    assert metrics["A: seed"].endswith(" ms") and metrics["B: best"].endswith(" ms")
    assert metrics["A time / B time"].endswith("x")


def test_knobs_without_a_recorded_run_say_none_recorded(cmp):
    cmp.text_input(key="b_knobs").input("k_split=8").run()
    no_failures(cmp)
    assert {m.label: m.value for m in cmp.metric}["B: best + k_split=8"] == "none recorded"


def test_the_same_knobs_twice_say_the_tir_is_identical(cmp):
    cmp.selectbox(key="b").set_value("seed").run()
    no_failures(cmp)
    assert any("identical" in i.value for i in cmp.info)


def test_bad_knobs_show_their_sentence(cmp):
    cmp.text_input(key="a_knobs").input("patch_m=128").run()
    no_failures(cmp)
    assert any("patch_m=128 is larger than tile_m=64" in e.value for e in cmp.error)


def test_cpu_times_both_live_and_gives_the_ratio(cmp):
    cmp.radio(key="target").set_value("cpu")
    cmp.button_group(key="size").set_value("custom").run()
    cmp.text_input(key="shape").input("M=64,N=64,K=64").run()
    cmp.button(key="cmp_run").click().run()
    no_failures(cmp)
    metrics = {m.label: m.value for m in cmp.metric}
    assert metrics["A: seed"].endswith(" ms") and metrics["A time / B time"].endswith("x")
