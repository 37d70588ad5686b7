"""The roofline and the standalone HTML export."""
from viz import LEVEL_COLORS, Ceiling, Point, attainable, roofline, to_html


def test_attainable_is_the_lower_of_the_two_roofs():
    c, m = [Ceiling("peak (datasheet)", 1000.0)], [Ceiling("DRAM (measured)", 100.0)]
    assert attainable(1.0, c, m) == 100.0
    assert attainable(50.0, c, m) == 1000.0


def test_ceilings_keep_their_labels_and_points_their_level_colour():
    fig = roofline([Point("seed", 4.0, 300.0, "predicted"), Point("seed", 4.0, 120.0, "measured")],
                   [Ceiling("67 TFLOP/s (datasheet)", 67000.0)], [Ceiling("4.8 TB/s (datasheet)", 4800.0)])
    names = [d.name for d in fig.data]
    assert "67 TFLOP/s (datasheet)" in names and "4.8 TB/s (datasheet)" in names
    pts = {d.name: d for d in fig.data if d.mode == "markers+text"}
    assert list(pts["measured"].y) == [120.0] and list(pts["predicted"].x) == [4.0]
    assert pts["measured"].marker.color[0] == LEVEL_COLORS["global"]


def test_html_export_is_standalone_and_does_not_autoplay():
    html = to_html(roofline([], [Ceiling("p", 10.0)], [Ceiling("b", 1.0)]), title="roof")
    assert "<title>roof</title>" in html
    assert "plotly.js" in html.lower() and len(html) > 1_000_000        # the library is inlined
    assert "Plotly.animate" not in html
