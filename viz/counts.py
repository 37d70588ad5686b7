"""Per-level count charts: grouped bars comparing schedules, and the reuse heat map of one trace."""
from __future__ import annotations

from collections import Counter

import numpy as np
import plotly.graph_objects as go

from ._grid import canvas_size, layout
from .palette import LEVEL_COLORS, LEVELS, level_scale


def _fmt(n: float) -> str:
    n = float(n)
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.0f}"


def level_bars(panels: dict[str, dict[str, dict[str, int]]], kind: str = "reads",
               log_y: bool | None = None, title: str = "", level_names: dict[str, str] | None = None) -> go.Figure:
    """One panel per entry (e.g. 'drawable tile', 'full size'); in each, one group of bars per count set
    ('current', 'naive', ...) with one bar per level in that level's colour. `level_names` relabels the levels
    in the legend and hover (e.g. the fpga's DRAM / on-chip buffer / GEMM-core registers); colours stay."""
    level_names = level_names or {}
    names = list(panels)
    n, gap = max(len(names), 1), 0.08
    width = (1 - gap * (n - 1)) / n
    traces, layout, notes = [], {}, []
    for i, name in enumerate(names):
        sets = panels[name]
        ax = "" if i == 0 else str(i + 1)
        values = [v for s in sets.values() for v in s.values() if v]
        log = log_y if log_y is not None else bool(values) and max(values) / max(min(values), 1) > 200
        for lvl in LEVELS:
            y = [sets[s].get(lvl, 0) for s in sets]
            label = level_names.get(lvl, lvl)
            traces.append(go.Bar(x=list(sets), y=y, name=label, marker_color=LEVEL_COLORS[lvl], legendgroup=lvl,
                                 showlegend=i == 0, text=[_fmt(v) if v else "" for v in y], textposition="outside",
                                 cliponaxis=False, xaxis=f"x{ax}", yaxis=f"y{ax}",
                                 hovertemplate=f"%{{x}}<br>{label} {kind}: %{{y:,}}<extra></extra>"))
        x0 = i * (width + gap)
        layout[f"xaxis{ax}"] = dict(domain=[x0, x0 + width], anchor=f"y{ax}", automargin=True)
        layout[f"yaxis{ax}"] = dict(anchor=f"x{ax}", type="log" if log else "linear", dtick=1 if log else None,
                                    title=dict(text=f"{kind}{' (log scale)' if log else ''}"), exponentformat="SI",
                                    gridcolor="#EEE", automargin=True, rangemode="tozero")
        notes.append(dict(text=name, x=x0 + width / 2, y=1.0, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=13)))
    fig = go.Figure(data=traces)
    fig.update_layout(template=None, barmode="group", plot_bgcolor="white", paper_bgcolor="white",
                      title=dict(text=title, x=0.0, xanchor="left", font=dict(size=14)) if title else None,
                      height=400, margin=dict(l=60, r=10, t=90 if title else 70, b=40),
                      legend=dict(orientation="h", y=1.1, yanchor="bottom", x=1, xanchor="right"),
                      uniformtext=dict(minsize=8, mode="hide"), annotations=notes, **layout)
    return fig


def reuse_counts(trace, level: str | None = "global") -> dict[str, Counter]:
    """Reads per element of each input: tensor -> Counter(index -> reads), from `level` or from any."""
    out = {t: Counter() for t in trace.inputs}
    for r in trace.records:
        if r.kind == "read" and r.tensor in out and (level is None or r.level == level):
            out[r.tensor][r.index] += 1
    return out


def reuse_heatmap(trace, level: str | None = "global", title: str = "",
                  level_names: dict[str, str] | None = None) -> go.Figure:
    """How many times each input element is read (from `level`, or from any level when None): reuse at a glance.
    Zero-padding cells around an input, when the trace reads them, are drawn too. `level_names` relabels the
    level (the colour stays the level's)."""
    counts = reuse_counts(trace, level)
    panels = layout({t: trace.tensors[t] for t in trace.inputs if t in trace.tensors}, trace.records, list(trace.inputs))
    z = np.full(canvas_size(panels), np.nan)
    text = np.full(z.shape, "", dtype=object)
    for p in panels:
        for idx in p.indices():
            rc = p.cell(idx)
            z[rc] = counts[p.tensor].get(idx, 0)
            text[rc] = f"{p.tensor}[{', '.join(map(str, idx))}]" + ("" if p.inside(idx) else " (zero padding)")
    top = int(np.nanmax(z)) if z.size and not np.isnan(z).all() else 0
    rows, cols = z.shape
    what = f"{(level_names or {}).get(level, level)} reads" if level else "reads from any level"
    fig = go.Figure(go.Heatmap(
        z=[[None if np.isnan(v) else int(v) for v in row] for row in z], text=text, zmin=0, zmax=max(top, 1),
        colorscale=level_scale(level or "register"), xgap=1, ygap=1, hoverongaps=False,
        texttemplate="%{z}", textfont=dict(size=10), colorbar=dict(title=dict(text=what), thickness=12),
        hovertemplate=f"%{{text}}: %{{z}} {what}<extra></extra>"))
    fig.update_layout(
        template=None, title=title or f"Reuse: {what} per input element (max {top})", plot_bgcolor="white",
        paper_bgcolor="white", margin=dict(l=10, r=10, t=70, b=10), height=max(260, 110 + 24 * (rows + 2)),
        xaxis=dict(visible=False, range=[-0.6, cols - 0.4], constrain="domain"),
        yaxis=dict(visible=False, range=[rows - 0.4, -1.8], scaleanchor="x", constrain="domain"),
        annotations=[dict(x=p.x0 - 0.5, y=p.y0 - 0.7, xanchor="left", yanchor="bottom", showarrow=False,
                          text=f"<b>{p.tensor}</b> {'×'.join(map(str, p.shape))}") for p in panels])
    return fig
