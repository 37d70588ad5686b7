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


def pad_factors(plan) -> list[int]:
    """pad_einsum's factors: the block tiles, and on the CPU the reduction tiles too. (On CUDA the reduction is
    not padded: see the pad_tiles knob's help. On the CPU the operands are copied into padded arrays anyway, and
    a reduction remainder puts a test in the innermost loop that halves the kernel's speed.)"""
    return [*plan.tiles, *(plan.splits if plan.target == "cpu" else [1] * len(plan.splits))]


def pad_to_tiles(sch: Schedule, blk, plan, steps: Steps, why: str) -> bool:
    """pad_einsum the output axes up to whole block tiles where the tiles do not divide them (`pad_tiles`)."""
    factors = pad_factors(plan)
    extents = [int(sch.get(loop).extent) for loop in sch.get_loops(blk)]
    if not plan.pad or all(e % f == 0 for e, f in zip(extents, factors)):
        return False
    sch.pad_einsum(blk, factors)
    steps(f"pad the output up to whole block tiles ({' x '.join(str(-(-e // f) * f) for e, f in zip(extents, factors))}"
          f" with the reduction): {why}")
    return True


def padded_shapes(sch: Schedule, plan) -> dict[str, tuple[int, ...]]:
    """The zero-padded views pad_tiles makes of the tensors (e.g. A_pad), with their shapes, on an unscheduled
    schedule (which this pads); {} where nothing is padded."""
    if producer(sch, "C_pad") is None:          # else the operator's padded definition (conv1d): padded already
        blk = sch.get_sblock("C")
        if getattr(plan, "kblocks", 1) > 1:     # split-K pads before it splits the reduction
            from .cuda import split_k_blocks
            split_k_blocks(sch, blk, plan, lambda _: None)
        else:
            pad_to_tiles(sch, blk, plan, lambda _: None, "")
    root = sch.get(sch.get_sblock("root"))
    return {b.name: tuple(int(d) for d in b.shape) for b in root.alloc_buffers if b.name.endswith("_pad")}
