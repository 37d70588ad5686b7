"""Per-level bars and the reuse heat map."""
import numpy as np

from handmade import gemm_trace
from kernels.records import reads_per_element
from viz import LEVEL_COLORS, level_bars, reuse_counts, reuse_heatmap
from viz._grid import layout


def test_bars_show_each_sets_counts_in_its_levels_colour():
    sets = {"current": {"global": 64, "shared": 0, "register": 512}, "naive": {"global": 1024, "shared": 0, "register": 0}}
    fig = level_bars({"drawable tile": sets, "full size": sets})
    bars = [b for b in fig.data if b.xaxis == "x"]
    assert [b.name for b in bars] == ["global", "shared", "register"]
    for b in bars:
        assert b.marker.color == LEVEL_COLORS[b.name]
        assert list(b.y) == [sets["current"][b.name], sets["naive"][b.name]]
    assert fig.layout.template.to_plotly_json() == {}


def test_bars_switch_to_a_log_axis_when_counts_span_orders_of_magnitude():
    fig = level_bars({"full": {"a": {"global": 10, "shared": 0, "register": 10 ** 6}}})
    assert fig.layout.yaxis.type == "log"


def test_reuse_map_equals_the_records():
    t = gemm_trace("naive", 3, 4, 2)
    fig = reuse_heatmap(t, "global")
    z = np.asarray(fig.data[0].z, dtype=float)
    panels = {p.tensor: p for p in layout({k: t.tensors[k] for k in t.inputs}, t.records, list(t.inputs))}
    for name in t.inputs:
        want = reads_per_element(t.records, name, t.tensors[name], "global")
        for idx in np.ndindex(*want.shape):
            assert z[panels[name].cell(idx)] == want[idx]


def test_reuse_from_any_level_counts_shared_reads_too():
    t = gemm_trace("shared")
    assert sum(reuse_counts(t, "global")["A"].values()) == 4
    assert sum(reuse_counts(t, None)["A"].values()) == 4 + 8
