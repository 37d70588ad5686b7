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
