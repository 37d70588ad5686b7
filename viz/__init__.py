"""Figures from records: pure functions (no Streamlit, no TVM), one fixed colour per memory level."""
from .counts import level_bars, reuse_counts, reuse_heatmap
from .export import to_html
from .palette import BARRIER, LEVEL_COLORS, LEVELS, NEUTRAL, tint
from .roofline import Ceiling, Point, attainable, roofline
from .tile import TileFrame, counter_text, frames, owner_at, tile_animation, view

__all__ = ["BARRIER", "LEVELS", "LEVEL_COLORS", "NEUTRAL", "Ceiling", "Point", "TileFrame", "attainable",
           "counter_text", "frames", "level_bars", "owner_at", "reuse_counts", "reuse_heatmap", "roofline", "tile_animation",
           "tint", "to_html", "view"]
