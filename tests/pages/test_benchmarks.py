"""The Benchmarks page through streamlit.testing: every recorded run, filters, plots, CSV."""
import pytest

from pages_app import no_failures, open_page


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return open_page("benchmarks", tmp_path, monkeypatch)


def test_every_recorded_run_is_in_the_table(bench):
    no_failures(bench)
    df = bench.dataframe[0].value
    assert len(df) > 100 and {"device", "date", "op", "shape", "name", "median_ms", "vs_ref"} <= set(df.columns)
    assert len(bench.get("plotly_chart")) == 3            # time, speed-up, fraction of roofline
    assert any(b.proto.label.startswith("Download these rows as CSV") for b in bench.get("download_button"))


def test_filters_narrow_the_table(bench):
    bench.multiselect(key="op").set_value(["conv1d"]).run()
    bench.toggle(key="presets").set_value(True).run()
    no_failures(bench)
    df = bench.dataframe[0].value
    assert set(df["op"]) == {"conv1d"} and set(df["name"]) <= {"baseline", "naive", "seed", "best", "dlight"}


def test_this_machines_runs_appear_with_the_shipped_ones(tmp_path, monkeypatch):
    from kernels import build, results
    from kernels import knobs as K
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "results.sqlite"))
    s = {"M": 32, "N": 32, "K": 32}
    results.record(build.run("gemm", s, K.preset("gemm", "cpu", "seed", s), "cpu", repeat=2), preset="seed")
    at = open_page("benchmarks", tmp_path, monkeypatch)
    no_failures(at)
    df = at.dataframe[0].value
    mine = df[df["source"].str.startswith("results store")]
    assert len(mine) == 1 and mine.iloc[0]["name"] == "seed" and mine.iloc[0]["shape"] == "M=32,N=32,K=32"
