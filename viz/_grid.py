"""Lay tensors out as 2-D grids on one canvas: size-1 axes dropped, leading axes as side-by-side slices."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

import numpy as np

GAP_X = 2          # empty columns between two tensors
GAP_Y = 3          # empty rows between two lines of tensors (room for two lines of labels)
MIN_WIDTH = 44     # wrap to a new line past this many columns (or the widest tensor)


@dataclass(frozen=True)
class Panel:
    """Where one tensor sits on the canvas. `lo`/`extent` may reach past the tensor's shape (a halo)."""
    tensor: str
    shape: tuple[int, ...]
    lo: tuple[int, ...]
    extent: tuple[int, ...]
    x0: int = 0
    y0: int = 0

    @cached_property
    def keep(self) -> tuple[int, ...]:
        """The axes drawn: every axis longer than one (the last one when all are length one)."""
        k = tuple(i for i, e in enumerate(self.extent) if e > 1)
        if k or not self.extent:
            return k
        return (len(self.extent) - 1,)

    @cached_property
    def slices(self) -> int:
        return prod(self.extent[i] for i in self.keep[:-2]) if len(self.keep) > 2 else 1

    @cached_property
    def rows(self) -> int:
        return self.extent[self.keep[-2]] if len(self.keep) >= 2 else 1

    @cached_property
    def cols(self) -> int:
        return self.extent[self.keep[-1]] if self.keep else 1

    @cached_property
    def width(self) -> int:
        return self.slices * self.cols + (self.slices - 1)

    @cached_property
    def cells(self) -> dict[tuple[int, ...], tuple[int, int]]:
        """index -> (row, column) for every drawn index: lookups while painting frames cost a dict get."""
        return {idx: self.cell(idx) for idx in self.indices()}

    def cell(self, index: tuple[int, ...]) -> tuple[int, int]:
        """(row, column) of `index` on the canvas."""
        d = [index[i] - self.lo[i] for i in self.keep] if index else [0]
        if len(d) == 1:
            return self.y0, self.x0 + d[0]
        s = 0
        for i, v in zip(self.keep[:-2], d[:-2]):
            s = s * self.extent[i] + v
        return self.y0 + d[-2], self.x0 + s * (self.cols + 1) + d[-1]

    def indices(self):
        """Every drawn index (tensor coordinates, halo included)."""
        for off in np.ndindex(*self.extent):
            yield tuple(int(o + l) for o, l in zip(off, self.lo))

    def inside(self, index: tuple[int, ...]) -> bool:
        return all(0 <= v < n for v, n in zip(index, self.shape))

    def slice_label(self, s: int) -> str:
        """`X[0,1]` for slice s: the tensor's leading indices that are fixed in that slice."""
        lead = self.keep[:-2]
        vals = {}
        for i in reversed(lead):
            vals[i] = s % self.extent[i] + self.lo[i]
            s //= self.extent[i]
        last = max(lead) if lead else -1
        return f"{self.tensor}[{','.join(str(vals.get(i, self.lo[i])) for i in range(last + 1))}]"


def layout(tensors: dict[str, tuple[int, ...]], records=(), order: list[str] | None = None) -> list[Panel]:
    """Panels for `tensors` (in `order`), each grown to cover every index the records touch, wrapped into lines."""
    seen: dict[str, set] = {t: set() for t in tensors}
    for r in records:
        if r.tensor in seen:
            seen[r.tensor].add(r.index)
    lo = {t: [0] * len(s) for t, s in tensors.items()}
    hi = {t: [n - 1 for n in s] for t, s in tensors.items()}
    for t, idx in seen.items():
        idx = np.array([i for i in idx if i and len(i) == len(tensors[t])], dtype=np.int64)
        if idx.size:
            lo[t] = [min(a, int(b)) for a, b in zip(lo[t], idx.min(axis=0))]
            hi[t] = [max(a, int(b)) for a, b in zip(hi[t], idx.max(axis=0))]
    names = [t for t in (order or list(tensors)) if t in tensors]
    panels = [Panel(t, tuple(tensors[t]), tuple(lo[t]), tuple(h - l + 1 for h, l in zip(hi[t], lo[t])))
              for t in names]
    limit = max([MIN_WIDTH] + [p.width for p in panels])
    out, x, y, line_h = [], 0, 0, 0
    for p in panels:
        if x and x + p.width > limit:
            x, y, line_h = 0, y + line_h + GAP_Y, 0
        out.append(Panel(p.tensor, p.shape, p.lo, p.extent, x, y))
        x += p.width + GAP_X
        line_h = max(line_h, p.rows)
    return out


def canvas_size(panels: list[Panel]) -> tuple[int, int]:
    """(rows, columns) of the canvas."""
    return (max(p.y0 + p.rows for p in panels), max(p.x0 + p.width for p in panels)) if panels else (1, 1)
