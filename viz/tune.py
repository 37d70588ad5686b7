"""The tuner's progress: each trial's time and the best so far, over the trials (records in, a figure out)."""
from __future__ import annotations

import plotly.graph_objects as go

from .palette import BARRIER, LEVEL_COLORS


def best_so_far(history, title: str = "Best so far over the trials") -> go.Figure:
    """`history`: trials with .median_ms (None for a failed candidate) in the order they were measured."""
    xs, ys, best, run = [], [], [], None
    for i, t in enumerate(history, 1):
        if t.median_ms is not None:
            xs.append(i)
            ys.append(t.median_ms)
            run = t.median_ms if run is None else min(run, t.median_ms)
        best.append(run)
    failed = [i for i, t in enumerate(history, 1) if t.median_ms is None]
    fig = go.Figure(layout=dict(template={}))
    fig.add_scatter(x=xs, y=ys, mode="markers", name="trial", marker=dict(color=LEVEL_COLORS["shared"], size=7))
    fig.add_scatter(x=list(range(1, len(history) + 1)), y=best, mode="lines", name="best so far",
                    line=dict(color=LEVEL_COLORS["global"], width=3, shape="hv"))
    if failed:
        fig.add_scatter(x=failed, y=[min(ys or [1])] * len(failed), mode="markers", name="failed (did not verify)",
                        marker=dict(color=BARRIER, symbol="x", size=8))
    fig.update_layout(title=title, xaxis_title="trial", yaxis_title="ms (log)", yaxis_type="log", height=320,
                      margin=dict(l=50, r=20, t=50, b=40), plot_bgcolor="white", paper_bgcolor="white")
    return fig
