"""A simulated time and where it goes: the load / compute / store queues one after another against the
pipelined time, with the compute and memory bounds (the fpga target's cycle model; pure, no Streamlit)."""
from __future__ import annotations

import plotly.graph_objects as go

from .palette import BARRIER, LEVEL_COLORS, tint

PARTS = (("load", "load_ms", LEVEL_COLORS["global"], "DMA loads, DRAM -> on-chip buffers"),
         ("compute", "compute_ms", LEVEL_COLORS["register"], "GEMM-core operations and accumulator resets"),
         ("store", "store_ms", tint(LEVEL_COLORS["global"], 0.45), "DMA stores, accumulator -> DRAM"))


def _ms(x: float) -> str:
    return f"{x:.4g} ms"


def time_breakdown(tb: dict, title: str = "") -> go.Figure:
    """Two bars on one time axis: the three queues' busy time end to end (what it would take with no overlap)
    and the simulated, pipelined time; the overlap the pipeline hid is the difference. Dashed lines mark the
    compute bound (MACs / core rate) and the memory bound (DRAM bytes / port rate). `tb` is
    fpga.time_breakdown's dict (times in ms)."""
    serial_row, piped_row = "one after another", "simulated (pipelined)"
    cycles_per_ms = float(tb.get("clock_mhz", 0)) * 1e3
    fig = go.Figure()
    for name, key, color, what in PARTS:
        v = float(tb.get(key, 0.0))
        fig.add_trace(go.Bar(y=[serial_row], x=[v], name=name, orientation="h", marker_color=color,
                             text=[_ms(v)] if v else [""], textposition="inside", insidetextanchor="middle",
                             textangle=0,
                             hovertemplate=f"{name}: %{{x:.4g}} ms ({what}"
                                           + (f", {v * cycles_per_ms:,.0f} cycles" if cycles_per_ms else "")
                                           + ")<extra>simulated</extra>"))
    total, overlap = float(tb.get("ms", 0.0)), float(tb.get("overlap_ms", 0.0))
    fig.add_trace(go.Bar(y=[piped_row], x=[total], name="simulated time", orientation="h", marker_color=BARRIER,
                         text=[f"{_ms(total)}" + (f" (overlap hid {_ms(overlap)})" if overlap > 0 else "")],
                         textposition="inside", insidetextanchor="middle", textangle=0, textfont=dict(color="white"),
                         hovertemplate="simulated: %{x:.4g} ms"
                                       + (f" ({tb.get('cycles', 0):,} cycles)" if "cycles" in tb else "")
                                       + "<extra>simulated</extra>"))
    shapes = []
    for key, label, dash in (("compute_bound_ms", "compute bound", "dot"), ("memory_bound_ms", "memory bound", "dash")):
        if key in tb:                   # a line over both bars, and its name in the legend
            x, line = float(tb[key]), dict(color="#333", width=1.5, dash=dash)
            shapes.append(dict(type="line", x0=x, x1=x, y0=0, y1=1, yref="paper", line=line))
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"{label} {_ms(x)}", line=line))
    fig.update_layout(template=None, barmode="stack", plot_bgcolor="white", paper_bgcolor="white", height=300,
                      title=dict(text=title, x=0.0, xanchor="left", font=dict(size=14)) if title else None,
                      margin=dict(l=10, r=10, t=50 if title else 20, b=40), shapes=shapes,
                      xaxis=dict(ticksuffix=" ms", gridcolor="#EEE", rangemode="tozero", automargin=True),
                      yaxis=dict(categoryorder="array", categoryarray=[piped_row, serial_row], automargin=True),
                      legend=dict(orientation="h", y=-0.18, yanchor="top", x=0, xanchor="left", traceorder="normal"),
                      uniformtext=dict(minsize=8, mode="hide"))
    return fig
