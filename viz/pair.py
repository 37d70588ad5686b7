"""Two drawable-tile animations in one figure, driven by one slider and one play button.

Each side is viz.tile_animation of its own trace; frame i of the pair shows each side at the same fraction of
its own run (both start and finish together), so two schedules with different numbers of accesses stay in step.
"""
from __future__ import annotations

import plotly.graph_objects as go

from .tile import tile_animation

GAP = 0.04


def _at(i: int, n: int, m: int) -> int:
    """Frame of an m-frame animation at position i of n (same fraction of the way through)."""
    return 0 if n <= 1 else round(i * (m - 1) / (n - 1))


def aligned(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """(frame of A, frame of B) for every frame of the pair: max(n_a, n_b) frames, each side in proportion."""
    n = max(n_a, n_b)
    return [(_at(i, n, n_a), _at(i, n, n_b)) for i in range(n)]


def _title(text: str, x: float, name: str) -> dict:
    return dict(text=f"<b>{name}</b>: {text}", x=x, y=1.0, xref="paper", yref="paper", xanchor="left",
                yanchor="bottom", showarrow=False, align="left", font=dict(size=12))


def tile_pair(trace_a, trace_b, name_a: str = "A", name_b: str = "B", thread: int | None = None,
              block: int | None = None, max_frames: int = 120) -> go.Figure:
    """Both schedules' drawable tiles side by side, animated together (same thread/block view on each side)."""
    figs = [tile_animation(t, thread=thread, block=block, max_frames=max_frames) for t in (trace_a, trace_b)]
    fa, fb = ([f.to_plotly_json() for f in fig.frames] for fig in figs)
    half = (1 - GAP) / 2
    doms = [[0, half], [1 - half, 1]]
    heat_a = figs[0].data[0].to_plotly_json()
    heat_b = {**figs[1].data[0].to_plotly_json(), "xaxis": "x2", "yaxis": "y2"}
    legend = [d.to_plotly_json() for d in figs[0].data[1:] if d.name != "pick"]
    data = [heat_a, heat_b, *legend]
    labels = [*(a.to_plotly_json() for a in figs[0].layout.annotations),
              *({**a.to_plotly_json(), "xref": "x2", "yref": "y2"} for a in figs[1].layout.annotations)]
    titles = [(_title(fa[i]["layout"]["title"]["text"], 0, name_a), _title(fb[j]["layout"]["title"]["text"],
                                                                          doms[1][0], name_b))
              for i, j in aligned(len(fa), len(fb))]
    frames = [go.Frame(dict(name=str(k), traces=[0, 1],
                            data=[dict(type="heatmap", z=fa[i]["data"][0]["z"]),
                                  dict(type="heatmap", z=fb[j]["data"][0]["z"])],
                            layout=dict(annotations=[*labels, *titles[k]])), _validate=False)
               for k, (i, j) in enumerate(aligned(len(fa), len(fb)))]
    ax = [f.layout for f in figs]
    n = len(frames)
    play = dict(frame=dict(duration=450, redraw=True), transition=dict(duration=0), fromcurrent=True, mode="immediate")
    step = dict(frame=dict(duration=0, redraw=True), mode="immediate", transition=dict(duration=0))
    ticks = {0: "start", n - 1: "end", **{round(q * (n - 1)): f"{round(q * 100)}%" for q in (0.25, 0.5, 0.75)}}
    fig = go.Figure(dict(data=data, layout=dict(template={})), _validate=False)
    fig._frame_objs = tuple(frames)          # as viz.tile: frames attached unvalidated; tests validate the figure
    fig.update_layout(
        annotations=[*labels, *titles[0]], plot_bgcolor="white", paper_bgcolor="white",
        xaxis=dict(visible=False, range=ax[0].xaxis.range, domain=doms[0], constrain="domain"),
        yaxis=dict(visible=False, range=ax[0].yaxis.range, scaleanchor="x", constrain="domain"),
        xaxis2=dict(visible=False, range=ax[1].xaxis.range, domain=doms[1], constrain="domain"),
        yaxis2=dict(visible=False, range=ax[1].yaxis.range, scaleanchor="x2", constrain="domain"),
        legend=dict(orientation="h", y=-0.02, yanchor="top", x=1, xanchor="right", font=dict(size=11)),
        margin=dict(l=10, r=10, t=110, b=90), height=max(ax[0].height or 400, ax[1].height or 400) + 40,
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.02, xanchor="left", yanchor="top",
                          showactive=False, buttons=[
                              dict(label="▶ play", method="animate", args=[None, play]),
                              dict(label="❚❚ pause", method="animate",
                                   args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])])],
        sliders=[dict(active=0, x=0.16, len=0.84, y=-0.02, yanchor="top", pad=dict(t=36, b=0), ticklen=2,
                      currentvalue=dict(visible=False), font=dict(size=9),
                      steps=[dict(method="animate", label=ticks.get(i, ""), args=[[str(i)], step])
                             for i in range(n)])])
    return fig
