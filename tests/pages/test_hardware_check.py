"""The Hardware check page through streamlit.testing: predictions beside the recorded counters."""
import re

from pages_app import no_failures, open_page


def test_the_summary_table_and_provenance(tmp_path, monkeypatch):
    at = open_page("hardware_check", tmp_path, monkeypatch)
    no_failures(at)
    metrics = {m.label: m.value for m in at.metric}
    ok, n = map(int, re.fullmatch(r"(\d+) of (\d+)", metrics["Within the promised agreement"]).groups())
    df = at.dataframe[0].value
    assert n == len(df) and 0 < ok <= n
    assert {"measured", "predicted", "rel_diff", "allowed", "within"} <= set(df.columns)
    assert any(m.value.startswith("**Worst row:**") for m in at.markdown)
    assert any("ncu" in c.value for c in at.code)         # the command that recorded the counters
    at.toggle(key="outside").set_value(True).run()
    no_failures(at)
    assert len(at.dataframe[0].value) == n - ok
