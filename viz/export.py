"""Any figure as one standalone HTML file (plotly.js inlined, plays without a server or network)."""
from __future__ import annotations

import plotly.graph_objects as go


def to_html(fig: go.Figure, title: str = "Kernel Lab") -> str:
    html = fig.to_html(include_plotlyjs=True, full_html=True, auto_play=False,
                       config={"displaylogo": False, "responsive": True})
    return html.replace("<head>", f"<head><title>{title}</title>", 1)
