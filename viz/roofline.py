"""The roofline: kernels placed by arithmetic intensity under compute and bandwidth ceilings."""
from __future__ import annotations

import math
from dataclasses import dataclass

import plotly.graph_objects as go

from .palette import BARRIER, LEVEL_COLORS


@dataclass(frozen=True)
class Ceiling:
    label: str          # says where the number comes from, e.g. "H200 HBM3e 4.8 TB/s (datasheet)"
    value: float        # GFLOP/s for compute, GB/s for bandwidth
    level: str = "global"


@dataclass(frozen=True)
class Point:
    name: str
    intensity: float    # FLOPs per byte moved at `level`
    gflops: float
    kind: str = "predicted"     # predicted | measured | simulated (a modelled device's cycle count, not a timing)
    level: str = "global"


def attainable(intensity: float, compute: list[Ceiling], memory: list[Ceiling]) -> float:
    """The roof over `intensity`: min(peak compute, bandwidth x intensity) over the highest ceilings."""
    peak = max((c.value for c in compute), default=float("inf"))
    bw = max((m.value for m in memory if m.level == "global"), default=max((m.value for m in memory), default=peak))
    return min(peak, bw * intensity)


def roofline(points: list[Point], compute: list[Ceiling], memory: list[Ceiling], title: str = "") -> go.Figure:
    xs = [p.intensity for p in points if p.intensity > 0]
    peak = max((c.value for c in compute), default=1.0)
    ridge = [peak / m.value for m in memory if m.value > 0]
    lo = min(xs + ridge + [1.0]) / 8
    hi = max(xs + ridge + [1.0]) * 8
    fig = go.Figure()
    for m in memory:
        x_top = min(hi, peak / m.value)
        fig.add_trace(go.Scatter(x=[lo, x_top], y=[m.value * lo, m.value * x_top], mode="lines", name=m.label,
                                 line=dict(color=LEVEL_COLORS.get(m.level, BARRIER), width=2),
                                 hovertemplate=f"{m.label}<br>%{{x:.3g}} FLOP/B -> %{{y:.4g}} GFLOP/s<extra></extra>"))
    for i, c in enumerate(sorted(compute, key=lambda c: -c.value)):
        start = min((c.value / m.value for m in memory if m.value > 0), default=lo)
        fig.add_trace(go.Scatter(x=[start, hi], y=[c.value, c.value], mode="lines", name=c.label,
                                 line=dict(color=BARRIER, width=2, dash="solid" if i == 0 else "dot"),
                                 hovertemplate=f"{c.label}: %{{y:.4g}} GFLOP/s<extra></extra>"))
    for kind, symbol in (("predicted", "diamond-open"), ("measured", "circle"), ("simulated", "square")):
        pts = [p for p in points if p.kind == kind and p.intensity > 0 and p.gflops > 0]
        if pts:
            fig.add_trace(go.Scatter(
                x=[p.intensity for p in pts], y=[p.gflops for p in pts], mode="markers+text", name=kind,
                text=[p.name for p in pts], textposition="top center", textfont=dict(size=10),
                marker=dict(symbol=symbol, size=12, color=[LEVEL_COLORS.get(p.level, BARRIER) for p in pts],
                            line=dict(width=2, color=[LEVEL_COLORS.get(p.level, BARRIER) for p in pts])),
                hovertemplate="%{text}<br>%{x:.3g} FLOP/byte<br>%{y:.4g} GFLOP/s<extra>" + kind + "</extra>"))
    ys = [p.gflops for p in points if p.gflops > 0] + [m.value * lo for m in memory]
    y_lo, y_hi = max(min(ys + [peak]) / 3, 1e-6), peak * 3
    fig.update_layout(
        template=None, title=title or None, plot_bgcolor="white", paper_bgcolor="white", height=420,
        margin=dict(l=70, r=10, t=50 if title else 20, b=50),
        xaxis=dict(type="log", title="arithmetic intensity (FLOP per byte)", gridcolor="#EEE", dtick=1,
                   automargin=True, range=[math.log10(lo), math.log10(hi)]),
        yaxis=dict(type="log", title="GFLOP/s", gridcolor="#EEE", dtick=1, exponentformat="SI", automargin=True,
                   range=[math.log10(y_lo), math.log10(y_hi)]),
        legend=dict(orientation="v", x=1.0, xanchor="right", y=0.0, yanchor="bottom", bgcolor="rgba(255,255,255,0.8)"))
    return fig
