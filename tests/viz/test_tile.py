"""The drawable-tile animation, from hand-built records."""
import base64

import numpy as np
import plotly.graph_objects as go

from handmade import gemm_trace
from kernels.records import Access, Trace, totals
import viz
from viz import LEVEL_COLORS, LEVELS, frames, tile_animation
from viz._grid import layout
from viz.tile import CODE_COLORS, NOW, PAST, SYNC


def _z(fig, i):
    """Frame i's heat map, decoded from the serialized figure (what the browser receives)."""
    z = fig.to_dict()["frames"][i]["data"][0]["z"]
    if isinstance(z, dict):                 # plotly's typed-array encoding: base64 bytes, dtype, shape
        shape = tuple(int(n) for n in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.asarray(z)


def _cell(trace, tensor, index):
    p = {p.tensor: p for p in layout(dict(trace.tensors), trace.records, ["A", "B", "C"])}[tensor]
    return p.cell(index)


def test_one_frame_per_record_plus_the_start_when_short(shared_trace):
    fig = tile_animation(shared_trace)
    assert len(fig.frames) == len(shared_trace.records) + 1
    assert list(fig.layout.sliders[0].steps[-1].args[0]) == [str(len(shared_trace.records))]


def test_frame_count_is_bounded_for_long_traces():
    t = gemm_trace("register", 8, 8, 8)
    assert len(t.records) > 500
    assert len(tile_animation(t, max_frames=60).frames) <= 61


def test_counters_equal_the_records_at_every_frame(shared_trace):
    for f in frames(shared_trace):
        assert f.counts == totals(shared_trace.records, upto=f.records[-1].step)


def test_each_access_is_painted_in_its_levels_colour(shared_trace):
    fig = tile_animation(shared_trace)
    for i, r in enumerate(shared_trace.records, start=1):
        if r.kind == "barrier":
            continue
        z = _z(fig, i)
        assert CODE_COLORS[z[_cell(shared_trace, r.tensor, r.index)]] == LEVEL_COLORS[r.level]


def test_earlier_accesses_keep_a_tint_of_their_last_level(shared_trace):
    fig = tile_animation(shared_trace)
    last = _z(fig, -1)
    assert last[_cell(shared_trace, "A", (0, 0))] == PAST["shared"]


def test_the_barrier_is_its_own_phase_and_frame(shared_trace):
    fr = frames(shared_trace)
    sync = [f for f in fr if f.name == "barrier"]
    assert len(sync) == 1 and len(sync[0].records) == 1 and sync[0].label == "sync"
    names = [f.name for f in fr]
    assert names[0] == "cooperative fill" and names[-1] == "compute"
    i = names.index("barrier") + 1
    z = _z(tile_animation(shared_trace), i)
    assert z[_cell(shared_trace, "A", (1, 1))] == SYNC       # resident in shared memory while the block waits


def test_grouped_frames_never_mix_a_barrier_with_accesses():
    t = gemm_trace("shared", 4, 4, 4)
    for f in frames(t, max_frames=10):
        kinds = {r.kind == "barrier" for r in f.records}
        assert len(kinds) == 1


def test_a_threads_view_keeps_its_accesses_and_its_blocks_barriers(shared_trace):
    recs = [r for f in frames(shared_trace, thread=1, block=0) for r in f.records]
    assert {r.thread for r in recs if r.kind != "barrier"} == {1}
    assert sum(r.kind == "barrier" for r in recs) == 1
    f = frames(shared_trace, thread=1, block=0)[-1]
    assert f.counts == totals(shared_trace.records, thread=1)


def test_the_caption_is_the_seed_sentence():
    f = frames(gemm_trace("naive"))[0]
    assert f.caption == "thread 0 of block 0 reads A[0, 0] straight from global memory; global reads so far: 1"


def test_zero_padding_read_outside_the_tensor_is_drawn_as_a_halo():
    recs = (Access(0, 0, 0, 0, "X", (-1,), "global", "read"), Access(1, 0, 0, 0, "Y", (0,), "global", "write"))
    t = Trace("conv1d", {}, "cpu", "", recs, 1, 1, {"X": (3,), "Y": (1,)}, ("X",), "Y")
    fig = tile_animation(t)
    assert _z(fig, 0).shape[1] >= 4                     # X grew by one cell on the left
    assert _z(fig, 1)[0, 0] == NOW["global"]


def test_the_figure_is_valid_plotly_and_colour_per_level_uses_no_template(shared_trace):
    fig = tile_animation(shared_trace, thread=0, block=0)
    go.Figure(fig.to_dict())                                        # full validation of data, layout, frames
    assert fig.to_dict()["layout"]["template"] == {}
    legend = {d.name: d.marker.color for d in fig.data[1:] if d.showlegend}
    assert all(legend[lvl] == LEVEL_COLORS[lvl] for lvl in LEVELS) and "local" not in legend    # no spills here


def test_a_click_on_an_output_cell_finds_the_thread_that_writes_it(shared_trace):
    pick = tile_animation(shared_trace).data[-1]
    assert pick.name == "pick" and len(pick.x) == 4                # one target per element of C (2x2)
    row, col = _cell(shared_trace, "C", (1, 0))
    assert viz.owner_at(shared_trace, row, col) == (0, 2)          # thread 2 computes C[1, 0]
