"""Charts of recorded runs: grouped bars (time, speed-up, fraction of roofline) and the hardware-check scatter.

DataFrames in, plotly figures out. Devices and tables get neutral colours: the three level colours stay
reserved for memory levels, as everywhere else in the app."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

GROUP_COLORS = ("#4D4D4D", "#CC79A7", "#E69F00", "#9E9E9E", "#7A5195", "#B07A3B")


def _fmt(v: float, unit: str) -> str:
    if unit == "x":
        return f"{v:.3g}x"
    if unit == "%":
        return f"{100 * v:.3g}%"
    return f"{v:.3g}"


def grouped_bars(df: pd.DataFrame, x: str, y: str, group: str, title: str = "", y_title: str = "",
                 log: bool | None = None, unit: str = "", hover: tuple[str, ...] = (), height: int = 420,
                 reference: float | None = None, reference_label: str = "",
                 colors: dict[str, str] | None = None) -> go.Figure:
    """One bar per (x, group) with its value printed on it; x keeps the order it first appears in `df`.
    `reference` draws a horizontal line (e.g. 1x = no speed-up, 100% of the roof); `colors` maps a group to its
    colour (the level colours, where the groups are memory levels)."""
    d = df[df[y].notna()]
    xs = list(dict.fromkeys(d[x].astype(str)))
    vals = d[y].astype(float)
    if log is None:
        pos = vals[vals > 0]
        log = len(pos) > 1 and pos.max() / pos.min() > 50
    traces = []
    for i, (g, part) in enumerate(d.groupby(group, sort=False)):
        part = part.assign(_x=part[x].astype(str)).drop_duplicates("_x", keep="first")
        custom = part[list(hover)].astype(str).values if hover else None
        tmpl = f"%{{x}}<br>{group}: {g}<br>{y}: %{{y:.4g}}" + "".join(
            f"<br>{h}: %{{customdata[{j}]}}" for j, h in enumerate(hover)) + "<extra></extra>"
        traces.append(go.Bar(x=part["_x"], y=part[y].astype(float), name=str(g),
                             marker_color=(colors or {}).get(str(g), GROUP_COLORS[i % len(GROUP_COLORS)]),
                             text=[_fmt(v, unit) for v in part[y].astype(float)], textposition="outside",
                             cliponaxis=False, customdata=custom, hovertemplate=tmpl))
    fig = go.Figure(traces)
    if reference is not None:
        fig.add_hline(y=reference, line=dict(color="#222", width=1, dash="dot"), annotation_text=reference_label,
                      annotation_position="top left")
    fig.update_layout(
        template=None, barmode="group", title=dict(text=title, x=0, xanchor="left", font=dict(size=14)) if title
        else None, plot_bgcolor="white", paper_bgcolor="white", height=height,
        margin=dict(l=60, r=10, t=60 if title else 30, b=40),
        xaxis=dict(categoryorder="array", categoryarray=xs, automargin=True, tickangle=-30 if len(xs) > 8 else 0),
        yaxis=dict(title=y_title or y, type="log" if log else "linear", gridcolor="#EEE", automargin=True,
                   dtick=1 if log else None,
                   tickformat=".0%" if unit == "%" and not log else None, exponentformat="SI"),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
        uniformtext=dict(minsize=8, mode="hide"))
    return fig


def agreement(df: pd.DataFrame, title: str = "") -> go.Figure:
    """Predicted against measured counts (log-log), one point per (kernel, metric); the diagonal is perfect
    agreement. Points outside the promised tolerance are drawn as crosses."""
    d = df[df["predicted"].notna() & (df["measured"] > 0) & (df["predicted"] > 0)]
    lo = min(d["measured"].min(), d["predicted"].min()) if len(d) else 1
    hi = max(d["measured"].max(), d["predicted"].max()) if len(d) else 10
    fig = go.Figure(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="predicted = measured",
                               line=dict(color="#BBB", dash="dot"), hoverinfo="skip"))
    for within, name, sym, color in ((True, "within the promised agreement", "circle", "#4D4D4D"),
                                     (False, "outside it", "x", "#CC79A7")):
        p = d[d["within"] == within]
        if p.empty:
            continue
        fig.add_trace(go.Scatter(
            x=p["measured"], y=p["predicted"], mode="markers", name=f"{name} ({len(p)})",
            marker=dict(symbol=sym, size=9, color=color, line=dict(width=1, color=color)),
            customdata=p[["op", "preset", "metric", "rel_diff", "knobs"]].astype(str).values,
            hovertemplate="%{customdata[0]} %{customdata[1]}: %{customdata[2]}<br>measured %{x:,}<br>"
                          "predicted %{y:,}<br>rel. diff %{customdata[3]}<br>%{customdata[4]}<extra></extra>"))
    rng = [math.log10(max(lo, 1)) - 0.2, math.log10(max(hi, 1)) + 0.2]
    fig.update_layout(template=None, title=title or None, plot_bgcolor="white", paper_bgcolor="white", height=440,
                      margin=dict(l=70, r=10, t=50 if title else 20, b=50),
                      xaxis=dict(type="log", title="measured (Nsight Compute)", range=rng, gridcolor="#EEE",
                                 exponentformat="SI"),
                      yaxis=dict(type="log", title="predicted (simulator)", range=rng, gridcolor="#EEE",
                                 exponentformat="SI"),
                      legend=dict(x=0.01, y=0.99, bgcolor="rgba(255,255,255,0.8)"))
    return fig
