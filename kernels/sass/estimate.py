"""A rough emulation time for a schedule, before emulating it: what a page checks before it starts one. Kept out
of the emulator's source (kernels.sass.shipped hashes that), so changing the estimate keeps the shipped counts."""
from __future__ import annotations

# The emulator's time, roughly: each thread's share of the multiply-adds, times what one emulated instruction costs
# over the lanes of a chunk (about 15 us, plus 1.2 ns a lane, on these cores). On the 814 held-out kernels it was
# fitted on it was at most 2.1x over the time the emulation took; on the next batch (3984747587), drawn after, one
# kernel reached 2.19x (a GEMM of 2 s), so the bound is taken as 3. It is far under the time taken where threads do
# work other than multiply-adds, so a limit on it stops only kernels that would take at least limit / ESTIMATE_OVER.
_PER_INSTRUCTION_S, _PER_LANE_S = 15e-6, 1.2e-9
ESTIMATE_OVER = 3.0


def estimate_seconds(op: str, shape: dict, knobs) -> float:
    """A rough emulation time for this schedule at this shape (0 where its counts are already made)."""
    from ..ops import OPS
    from . import _compiled, _known
    if _known(op, shape, knobs) is not None:
        return 0.0
    ls = _compiled(op, tuple(shape.items()), knobs).launches
    return estimate_from(OPS[op].flops(shape), [(ln.blocks, ln.threads) for ln in ls])


def estimate_from(flops: float, launches: list[tuple[int, int]]) -> float:
    """estimate_seconds from the operator's floating-point operations and each launch's (blocks, threads)."""
    from . import LANES
    per_thread = flops / max(b * t for b, t in launches)
    out = 0.0
    for b, t in launches:
        per = max(1, LANES // t)            # blocks a chunk
        out += -(-b // per) * per_thread * (_PER_INSTRUCTION_S + _PER_LANE_S * min(b, per) * t)
    return out
