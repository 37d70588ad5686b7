"""Shared pieces of the schedule engines: the step log and stage lookups."""
from __future__ import annotations

from dataclasses import dataclass, field

from tvm.s_tir import Schedule


@dataclass
class Steps:
    """The reasons behind a schedule, one line per group of primitives, in the order applied."""
    lines: list[str] = field(default_factory=list)

    def __call__(self, reason: str) -> None:
        self.lines.append(reason)


def producer(sch: Schedule, name: str):
    """The block that computes tensor `name`, or None when it is a function argument."""
    try:
        return sch.get_sblock(name)
    except Exception:       # noqa: BLE001 - TVM raises its own error type for a missing block
        return None


def read_index(sch: Schedule, blk, name: str) -> int:
    for i, region in enumerate(sch.get(blk).reads):
        if region.source.name == name:
            return i
    raise KeyError(name)


def is_pad(name: str) -> bool:
    return name.endswith("_pad")


def inline_pads(sch: Schedule, keep: set[str], steps: Steps) -> None:
    for name in ("A_pad", "X_pad"):
        b = producer(sch, name)
        if b is not None and name not in keep:
            sch.compute_inline(b)
            steps(f"compute_inline({name}): the zero padding becomes a bounds test in the reader, no extra array.")
