"""The drawable-tile animation: operands and output as grids, one frame per step (or group of steps).

Each frame paints the elements accessed in that step in the colour of the level that served them; elements
touched earlier keep a light tint of their last level. Frames, slider and play button run in the browser.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import plotly.graph_objects as go

from kernels.records import describe

from ._grid import Panel, canvas_size, layout
from .palette import BARRIER, HALO, LEVEL_COLORS, LEVELS, NEUTRAL, OWNED, tint

TILE_LEVELS = (*LEVELS, "local")    # local memory appears in the machine's trace, where nvcc spilled
# Cell codes on the canvas heat map (one discrete colour each); int8 keeps every frame a few kB.
GAP, UNTOUCHED, HALO_CELL, OWNED_CELL = 0, 1, 2, 3
PAST = {lvl: 4 + i for i, lvl in enumerate(TILE_LEVELS)}               # touched earlier: tint of the level
NOW = {lvl: 4 + len(TILE_LEVELS) + i for i, lvl in enumerate(TILE_LEVELS)}   # touched now: the level's colour
SYNC = 4 + 2 * len(TILE_LEVELS)                                        # resident in shared memory at a barrier
CODE_COLORS = ["#FFFFFF", NEUTRAL, HALO, OWNED, *(tint(LEVEL_COLORS[lvl]) for lvl in TILE_LEVELS),
               *(LEVEL_COLORS[lvl] for lvl in TILE_LEVELS), BARRIER]
MAX_FRAMES = 120


@dataclass(frozen=True)
class Words:
    """How a figure names a trace's memory levels, phases and actors. The default (every field empty) is the
    GPU's: global / shared / register, cooperative fill / barrier / compute, "thread t of block b". Another
    target passes its own, e.g. the fpga's DRAM / on-chip buffer / GEMM-core registers: the level keys (and so
    the colours) stay the same, only the words change."""
    levels: tuple = ()                  # ((level, label), ...)
    phase: Callable | None = None       # the records of one phase -> its name
    actors: tuple = ()                  # ((phase name, who makes its accesses), ...)
    subject: str = ""                   # who the whole view follows ("the accelerator"); "" = threads

    def level(self, lvl: str) -> str:
        return dict(self.levels).get(lvl, lvl)

    def actor(self, phase_name: str) -> str | None:
        return dict(self.actors).get(phase_name)


GPU_WORDS = Words()


@dataclass(frozen=True)
class TileFrame:
    """One animation frame: the records it plays and the counters after it."""
    records: tuple
    phase: int
    name: str                  # cooperative fill | barrier | compute
    label: str                 # shown on the slider where a phase starts, else ""
    counts: dict               # per-level reads so far (in this view)
    caption: str


def view(trace, thread: int | None = None, block: int | None = None) -> list:
    """The records of one block (None: every block) and one thread (None: every thread); a thread's view
    keeps its block's barriers, since it waits at them too."""
    return [r for r in trace.records
            if (block is None or r.block == block) and (thread is None or r.thread == thread or r.kind == "barrier")]


def who(thread: int | None, block: int | None, words: Words = GPU_WORDS) -> str:
    if words.subject and thread is None and block is None:
        return words.subject
    if thread is None:
        return "all threads" + ("" if block is None else f" of block {block}")
    return f"thread {thread}" + (" of every block" if block is None else f" of block {block}")


def _phase_name(recs) -> str:
    if recs and recs[0].kind == "barrier":
        return "barrier"
    if any(r.kind == "write" and r.level == "shared" for r in recs):
        return "cooperative fill"
    return "compute"


def _segments(recs) -> list[list]:
    """Runs of records in one phase; every barrier is a segment of its own."""
    segs: list[list] = []
    for r in recs:
        if r.kind == "barrier" or not segs or segs[-1][0].kind == "barrier" or segs[-1][0].phase != r.phase:
            segs.append([r])
        else:
            segs[-1].append(r)
    return segs


def _chunks(segs: list[list], max_frames: int) -> list[list]:
    """Split segments into at most `max_frames` groups, never mixing two segments in one group
    unless there are more segments than frames."""
    n = sum(len(s) for s in segs)
    if n <= max_frames:
        return [[r] for s in segs for r in s]
    if len(segs) > max_frames:                      # too many phases: merge whole segments evenly
        per = -(-len(segs) // max_frames)
        return [[r for s in segs[i:i + per] for r in s] for i in range(0, len(segs), per)]
    budget = max_frames - len(segs)                 # one frame per segment, the rest shared by length
    out = []
    for s in segs:
        k = 1 + (budget * len(s)) // n
        size = -(-len(s) // k)
        out += [s[i:i + size] for i in range(0, len(s), size)]
    return out


def frames(trace, thread: int | None = None, block: int | None = None,
           max_frames: int = MAX_FRAMES, words: Words = GPU_WORDS) -> list[TileFrame]:
    """The animation's frames as data (the figure draws these; tests read them)."""
    segs = _segments(view(trace, thread, block))
    seg_names = [(words.phase or _phase_name)(s) for s in segs]
    names = {id(r): n for s, n in zip(segs, seg_names) for r in s}
    counts = dict.fromkeys(LEVELS, 0)
    out, last_seg = [], None
    for group in _chunks(segs, max_frames):
        for r in group:
            if r.kind == "read":
                counts = {**counts, r.level: counts.get(r.level, 0) + 1}
        name = "+".join(dict.fromkeys(names[id(r)] for r in group))
        seg = (group[0].phase, name)
        last = group[-1]
        cap = caption(last, counts.get(last.level, 0), words, names[id(last)])
        if len(group) > 1:
            cap = f"steps {group[0].step}–{last.step} ({len(group)} accesses), last: {cap}"
        label = ("sync" if name == "barrier" else f"{name} {group[0].phase}") if seg != last_seg else ""
        out.append(TileFrame(tuple(group), group[0].phase, name, label, counts, cap))
        last_seg = seg
    return out


def caption(r, so_far: int, words: Words = GPU_WORDS, phase_name: str = "") -> str:
    """The seed's sentence for a read or a barrier (records.describe); writes say where the value goes.
    With a target's own words (levels, actors), the sentence uses those."""
    if words.levels and r.kind in ("read", "write"):
        actor = words.actor(phase_name) or f"thread {r.thread} of block {r.block}"
        idx, lvl = ", ".join(map(str, r.index)), words.level(r.level)
        if r.kind == "write":
            return f"{actor} writes {r.tensor}[{idx}] into the {lvl}" if r.level != "global" else \
                f"{actor} writes {r.tensor}[{idx}] to {lvl}"
        return f"{actor} reads {r.tensor}[{idx}] from {'the ' if r.level != 'global' else ''}{lvl}; " \
               f"{lvl} reads so far: {so_far}"
    if r.kind != "write":
        return describe(r, so_far)
    into = {"global": "to global memory", "shared": "into shared memory", "register": "into its registers",
            "local": "to its local memory"}[r.level]
    return f"thread {r.thread} of block {r.block} writes {r.tensor}[{', '.join(map(str, r.index))}] {into}"


def drawn(trace) -> list[str]:
    """Tensors to draw, in reading order: each input followed by its staged copies (A, A_pad), other
    intermediates (D), the output. Intermediates no record touches (inlined away) are left out."""
    touched = {r.tensor for r in trace.records}
    names = [t for t in trace.tensors if t in touched or t in trace.inputs or t == trace.output]
    order = []
    for i in trace.inputs:
        order += [i] + [t for t in names if t.startswith(i + "_")]
    order += [t for t in names if t not in order and t != trace.output]
    return [t for t in order if t in trace.tensors] + [trace.output]


def owner_at(trace, row: int, col: int) -> tuple[int, int] | None:
    """(block, thread) that writes the element drawn at canvas (row, col), or else first reads it: lets a
    click on the animation pick the thread to follow."""
    for p in layout({t: trace.tensors[t] for t in drawn(trace)}, trace.records):
        hit = [idx for idx in p.indices() if p.cell(idx) == (row, col)]
        if hit:
            mine = [r for r in trace.records if r.tensor == p.tensor and r.index == hit[0] and r.kind != "barrier"]
            best = [r for r in mine if r.kind == "write"] or mine
            return (best[0].block, best[0].thread) if best else None
    return None


def counter_text(counts: dict, words: Words = GPU_WORDS) -> str:
    return " · ".join(f"{words.level(lvl)} {counts.get(lvl, 0):,}" for lvl in TILE_LEVELS
                      if lvl in LEVELS or counts.get(lvl))


def _base(panels: list[Panel], owned: set) -> np.ndarray:
    z = np.full(canvas_size(panels), GAP, dtype=np.int8)
    for p in panels:
        for idx in p.indices():
            rc = p.cell(idx)
            z[rc] = OWNED_CELL if (p.tensor, idx) in owned else (UNTOUCHED if p.inside(idx) else HALO_CELL)
    return z


def _hover(panels: list[Panel], shape) -> np.ndarray:
    text = np.full(shape, "", dtype=object)
    for p in panels:
        for idx in p.indices():
            text[p.cell(idx)] = f"{p.tensor}[{', '.join(map(str, idx))}]" + ("" if p.inside(idx) else " (zero padding)")
    return text


def _colorscale() -> list:
    n = len(CODE_COLORS)
    out = []
    for i, c in enumerate(CODE_COLORS):
        out += [[i / n, c], [(i + 1) / n, c]]
    return out


def tile_animation(trace, thread: int | None = None, block: int | None = None,
                   max_frames: int = MAX_FRAMES, title: str = "", words: Words = GPU_WORDS) -> go.Figure:
    """Operands and output of the drawable tile, animated step by step for one thread or all threads.
    `words` names the levels, phases and actors (legend, counters, captions); the colours stay per level."""
    fr = frames(trace, thread, block, max_frames, words)
    panels = layout({t: trace.tensors[t] for t in drawn(trace)}, trace.records)
    where = {p.tensor: p for p in panels}
    owned = set()
    if thread is not None or block is not None:
        owned = {(r.tensor, r.index) for r in view(trace, thread, block)
                 if r.kind == "write" and r.tensor == trace.output}
    base = _base(panels, owned)
    rows, cols = base.shape
    name = who(thread, block, words)

    def at(r):
        """Canvas cell of a record, or None (a barrier, or an index the tensor's shape does not name)."""
        p = where.get(r.tensor)
        return p.cells.get(r.index) if p is not None else None

    zs, state = [base], base.copy()
    for f in fr:
        z = state.copy()
        for r in f.records:
            if r.kind == "barrier":
                z[state == PAST["shared"]] = SYNC
            elif (rc := at(r)) is not None:
                z[rc] = NOW[r.level]
                state[rc] = PAST[r.level]
        zs.append(z)
    titles = [f"<b>{name}</b> · before the first step<br>{counter_text(dict.fromkeys(LEVELS, 0), words)}"]
    titles += [f"<b>{name}</b> · {f.name} · {counter_text(f.counts, words)}<br>"
               f"<span style='font-size:12px'>{f.caption}</span>" for f in fr]

    heat = dict(type="heatmap", z=zs[0], zmin=-0.5, zmax=len(CODE_COLORS) - 0.5, colorscale=_colorscale(),
                showscale=False, xgap=1, ygap=1, text=_hover(panels, base.shape),
                hovertemplate="%{text}<extra></extra>")
    legend = [dict(type="scatter", x=[None], y=[None], mode="markers", name=name, showlegend=True,
                   marker=dict(symbol="square", size=12, color=color))
              for name, color in [*((words.level(lvl), LEVEL_COLORS[lvl]) for lvl in TILE_LEVELS
                                    if lvl in LEVELS or any(r.level == lvl for r in trace.records)),
                                  *([("barrier", BARRIER)] if words.phase is None or any(
                                      r.kind == "barrier" for r in trace.records) else []),
                                  ("untouched", NEUTRAL), ("outputs of this view", OWNED)]
              if name != "outputs of this view" or owned]
    # Invisible markers on the output cells: a heat map cannot be clicked to select, a scatter point can,
    # so a click on an output element can pick the thread that computes it (see owner_at).
    out = where[trace.output]
    cells = [(idx, out.cell(idx)) for idx in out.indices() if out.inside(idx)]
    pick = dict(type="scatter", mode="markers", x=[c for _, (_, c) in cells], y=[r for _, (r, _) in cells],
                text=[f"{trace.output}[{', '.join(map(str, i))}]: click to follow its thread" for i, _ in cells],
                hovertemplate="%{text}<extra></extra>", showlegend=False, name="pick",
                marker=dict(symbol="square", size=14, opacity=0, color="#000000"))
    fig = go.Figure(dict(data=[heat, *legend, pick], layout=dict(template={})), _validate=False)
    # Frames are plain dicts wrapped without plotly's per-property validation, and attached directly:
    # the public `fig.frames = ...` re-validates every frame (~40 ms for 100). The tests validate the
    # whole figure, frames included, so a plotly that renamed this attribute would fail them.
    fig._frame_objs = tuple(
        go.Frame(dict(name=str(i), data=[dict(type="heatmap", z=z)], traces=[0], layout=dict(title=dict(text=t))),
                 _validate=False)
        for i, (z, t) in enumerate(zip(zs, titles)))
    labels = [dict(x=p.x0 - 0.5, y=p.y0 - (1.7 if p.slices > 1 else 0.7), xanchor="left", yanchor="bottom",
                   showarrow=False, text=f"<b>{p.tensor}</b> {'×'.join(map(str, p.shape))}", font=dict(size=12))
              for p in panels]
    labels += [dict(x=p.x0 + s * (p.cols + 1) - 0.5, y=p.y0 - 0.7, xanchor="left", yanchor="bottom", showarrow=False,
                    text=p.slice_label(s), font=dict(size=10, color="#666"))
               for p in panels if p.slices > 1 for s in range(p.slices)]
    play = dict(frame=dict(duration=450, redraw=True), transition=dict(duration=0), fromcurrent=True, mode="immediate")
    fig.update_layout(
        title=dict(text=titles[0], x=0.01, xanchor="left", font=dict(size=14)),
        annotations=labels, plot_bgcolor="white", paper_bgcolor="white",
        xaxis=dict(visible=False, range=[-0.6, cols - 0.4], constrain="domain"),
        yaxis=dict(visible=False, range=[rows - 0.4, -2.8 if any(p.slices > 1 for p in panels) else -1.8], scaleanchor="x", constrain="domain"),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1, xanchor="right", font=dict(size=11)),
        margin=dict(l=10, r=10, t=96, b=70), height=max(360, 170 + 24 * (rows + 2)),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=0, xanchor="left", yanchor="top",
                          showactive=False, buttons=[
                              dict(label="▶ play", method="animate", args=[None, play]),
                              dict(label="❚❚ pause", method="animate",
                                   args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])])],
        sliders=[dict(active=0, x=0.16, len=0.84, y=0, yanchor="top", pad=dict(t=6, b=0),
                      currentvalue=dict(visible=False), ticklen=2, font=dict(size=9),
                      steps=[dict(method="animate", label=(["start"] + [f.label for f in fr])[i],
                                  args=[[str(i)], dict(frame=dict(duration=0, redraw=True), mode="immediate",
                                                       transition=dict(duration=0))])
                             for i in range(len(zs))])],
    )
    return fig
