"""Charts of recorded runs, from hand-made tables."""
import pandas as pd
import plotly.graph_objects as go

from viz import LEVEL_COLORS, agreement, grouped_bars


def _runs():
    return pd.DataFrame({"name": ["baseline", "seed", "best", "baseline", "seed"],
                         "median_ms": [100.0, 10.0, 1.0, 50.0, 5.0],
                         "run": ["gpu", "gpu", "gpu", "cpu", "cpu"], "knobs": ["a", "b", "c", "d", "e"]})


def test_one_trace_per_group_and_values_equal_the_table():
    fig = grouped_bars(_runs(), "name", "median_ms", "run", hover=("knobs",))
    go.Figure(fig.to_dict())
    assert [t.name for t in fig.data] == ["gpu", "cpu"]
    assert list(fig.data[0].y) == [100.0, 10.0, 1.0] and list(fig.data[1].x) == ["baseline", "seed"]
    assert fig.layout.yaxis.type == "log"                     # a 100x range switches to log by itself


def test_missing_values_are_left_out_and_colors_can_follow_the_levels():
    df = _runs().assign(median_ms=[1.0, None, 2.0, 3.0, 4.0], run=["local", "local", "local", "shared", "shared"])
    fig = grouped_bars(df, "name", "median_ms", "run", colors={"local": LEVEL_COLORS["register"]})
    assert list(fig.data[0].x) == ["baseline", "best"]
    assert fig.data[0].marker.color == LEVEL_COLORS["register"]


def test_agreement_draws_crosses_outside_the_tolerance():
    df = pd.DataFrame({"measured": [100, 200, 0], "predicted": [100, 300, 0], "within": [True, False, True],
                       "op": "gemm", "preset": "seed", "metric": "m", "rel_diff": [0, 0.5, 0], "knobs": "k"})
    fig = agreement(df)
    go.Figure(fig.to_dict())
    names = [t.name for t in fig.data]
    assert any("within" in n and "(1)" in n for n in names) and any("outside" in n and "(1)" in n for n in names)
