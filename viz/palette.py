"""One colour per memory level, used by every figure in the app (and a neutral and a barrier colour)."""
from __future__ import annotations

LEVELS = ("global", "shared", "register")

# Okabe-Ito colours: distinct for colour-blind viewers and in greyscale (global darkest-warm, register light).
LEVEL_COLORS: dict[str, str] = {
    "global": "#D55E00",     # vermillion: far and slow, ~400 cycles
    "shared": "#0072B2",     # blue: per block, ~30 cycles
    "register": "#009E73",   # green: per thread, ~1 cycle
    "local": "#CC79A7",      # reddish purple: per thread but in device memory (spills), the machine's view only
}
NEUTRAL = "#E9E9EE"          # an element nobody has touched yet
HALO = "#F7F7F7"             # zero padding around an input (read as zero, never stored)
OWNED = "#C9C9D3"            # outputs the selected thread is responsible for
BARRIER = "#444444"          # __syncthreads(): every thread of the block waits
GRID_LINE = "#FFFFFF"


def tint(color: str, amount: float = 0.55) -> str:
    """`color` mixed with white: the history shade of a level (elements touched earlier)."""
    c = color.lstrip("#")
    rgb = [int(c[i:i + 2], 16) for i in (0, 2, 4)]
    mixed = [round(v + (255 - v) * amount) for v in rgb]
    return "#" + "".join(f"{v:02X}" for v in mixed)


def level_scale(level: str) -> list[list]:
    """A sequential colour scale from white to the level's colour (heat maps of counts at one level)."""
    return [[0.0, "#FFFFFF"], [1.0, LEVEL_COLORS.get(level, BARRIER)]]
