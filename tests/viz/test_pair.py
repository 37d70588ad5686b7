"""Two tile animations in one figure, from hand-built records: one slider drives both sides."""
import base64

import numpy as np
import plotly.graph_objects as go

from handmade import gemm_trace
from viz import aligned, tile_animation, tile_pair


def _z(fig, i, trace):
    z = fig.to_dict()["frames"][i]["data"][trace]["z"]
    if isinstance(z, dict):
        shape = tuple(int(n) for n in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.asarray(z)


def test_aligned_keeps_both_sides_in_proportion():
    pairs = aligned(5, 9)
    assert len(pairs) == 9
    assert pairs[0] == (0, 0) and pairs[-1] == (4, 8)
    assert [b for _, b in pairs] == list(range(9))
    assert all(a1 <= a2 for (a1, _), (a2, _) in zip(pairs, pairs[1:]))


def test_one_slider_drives_both_sides():
    a, b = gemm_trace("naive"), gemm_trace("shared")
    fig = tile_pair(a, b, "naive", "shared")
    go.Figure(fig.to_dict())                                  # the serialized figure validates, frames included
    n = max(len(tile_animation(t).frames) for t in (a, b))
    assert len(fig.frames) == n == len(fig.layout.sliders[0].steps)
    assert all(list(f.traces) == [0, 1] for f in fig.frames)
    assert len(fig.layout.updatemenus) == 1                   # one play button


def test_each_side_ends_on_its_own_last_frame():
    a, b = gemm_trace("naive"), gemm_trace("register")
    fig = tile_pair(a, b)
    last_a, last_b = tile_animation(a), tile_animation(b)
    np.testing.assert_array_equal(_z(fig, len(fig.frames) - 1, 0), _z(last_a, len(last_a.frames) - 1, 0))
    np.testing.assert_array_equal(_z(fig, len(fig.frames) - 1, 1), _z(last_b, len(last_b.frames) - 1, 0))


def test_the_titles_name_each_side_and_its_counters():
    fig = tile_pair(gemm_trace("naive"), gemm_trace("shared"), "A: naive", "B: shared")
    texts = [a["text"] for a in fig.to_dict()["frames"][-1]["layout"]["annotations"]]
    assert any(t.startswith("<b>A: naive</b>") and "global" in t for t in texts)
    assert any(t.startswith("<b>B: shared</b>") and "shared" in t for t in texts)
