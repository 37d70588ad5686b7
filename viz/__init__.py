"""Figures from records: pure functions (no Streamlit, no TVM), one fixed colour per memory level."""
from .bench import agreement, grouped_bars
from .counts import level_bars, reuse_counts, reuse_heatmap
from .export import to_html
from .palette import BARRIER, LEVEL_COLORS, LEVELS, NEUTRAL, tint
from .pair import aligned, tile_pair
from .roofline import Ceiling, Point, attainable, roofline
from .tile import TileFrame, Words, counter_text, frames, owner_at, tile_animation, view
from .timing import time_breakdown
from .tune import best_so_far

__all__ = ["best_so_far", "agreement", "aligned", "attainable", "BARRIER", "Ceiling", "counter_text", "frames", "grouped_bars",
           "level_bars", "LEVEL_COLORS", "LEVELS", "NEUTRAL", "owner_at", "Point", "reuse_counts", "reuse_heatmap",
           "roofline", "tile_animation", "tile_pair", "TileFrame", "time_breakdown", "tint", "to_html", "view",
           "Words"]
