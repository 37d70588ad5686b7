"""The Hardware check page through streamlit.testing: predictions beside the recorded counters."""
import re

from pages_app import no_failures, open_page


def _regression(at):
    """The regression set's table (the held-out misses, if any, come first)."""
    return next(d.value for d in at.dataframe if "rel_diff" in d.value.columns)


def test_the_summary_table_and_provenance(tmp_path, monkeypatch):
    at = open_page("hardware_check", tmp_path, monkeypatch)
    no_failures(at)
    metrics = {m.label: m.value for m in at.metric}
    ok, n = map(int, re.fullmatch(r"(\d+) of (\d+)", metrics["Within the promised agreement"]).groups())
    df = _regression(at)
    assert n == len(df) and 0 < ok <= n
    assert {"measured", "predicted", "rel_diff", "allowed", "within"} <= set(df.columns)
    assert any(m.value.startswith("**Worst row:**") for m in at.markdown)
    assert any("ncu" in c.value for c in at.code)         # the command that recorded the counters
    at.toggle(key="outside").set_value(True).run()
    no_failures(at)
    assert len(_regression(at)) == n - ok


def test_the_page_leads_with_the_held_out_figure(tmp_path, monkeypatch):
    from kernels import hwcheck
    at = open_page("hardware_check", tmp_path, monkeypatch)
    no_failures(at)
    h = hwcheck.heldout()
    assert at.subheader[0].value.startswith("Held out")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Kernels whose every counter agrees"] == f"{int(h['agrees'].sum())} of {len(h)}"
    assert any("seed 652328404" in m.value for m in at.markdown)


def test_batches_still_waiting_for_the_gpu_are_named_apart_from_the_figure(tmp_path, monkeypatch):
    """A batch whose predictions are committed but which no GPU has profiled yet is named below the held-out
    figure (seed, kernels, the command that drew it) and counts in none of its numbers."""
    from kernels import hwcheck
    wait = hwcheck.waiting()
    judged = {b["seed"] for b in hwcheck.batches()}
    assert all(w["seed"] not in judged and w["command"].startswith("python -m bench.heldout draw") for w in wait)
    at = open_page("hardware_check", tmp_path, monkeypatch)
    no_failures(at)
    text = " ".join(c.value for c in at.caption)
    for w in wait:
        assert f"seed {w['seed']}, {w['kernels']} kernels" in text
    assert ("not yet profiled" in text) == bool(wait)
    assert {int(s) for s in hwcheck.heldout()["seed"].unique()} == judged
