"""Shape guards: a shape whose indices overflow 32 bits, or whose tensors do not fit in the memory of the machine
that would hold them, gets one sentence naming the limit and a shape that fits."""
from __future__ import annotations

import math
import os

INDEX_LIMIT = 2 ** 31 - 1        # TVM lowers indices to 32-bit integers (NarrowDataType(32))


def _elements(op: str, shape: dict) -> dict[str, int]:
    from .ops import OPS
    o = OPS[op]
    shapes = dict(zip(o.inputs, o.input_shapes(shape)))
    shapes[o.output] = o.output_shape(shape)
    return {t: math.prod(s) for t, s in shapes.items()}


def fitting(op: str, shape: dict, elements_limit: float) -> dict:
    """The shape scaled down (every dimension but the kernel size by one factor) until its largest tensor holds
    at most `elements_limit` elements."""
    from .ops import OPS
    s = dict(shape)
    for _ in range(64):
        if max(_elements(op, s).values()) <= elements_limit:
            return s
        s = {d: (v if d == "K" and op != "gemm" else max(1, int(v * 0.9))) for d, v in s.items()}
        rules = OPS[op].shape_rules(s)
        if rules and "K" in s:          # an odd kernel size stays odd
            s["K"] |= 1
    return s


def text(shape: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def index_problems(op: str, shape: dict) -> list[str]:
    """The 32-bit indexing limit, in one sentence, or nothing."""
    big = {t: n for t, n in _elements(op, shape).items() if n > INDEX_LIMIT}
    if not big:
        return []
    t, n = max(big.items(), key=lambda kv: kv[1])
    return [f"{t} would hold {n:,} elements, past the {INDEX_LIMIT:,} that 32-bit indices reach (the kernels "
            f"index with 32-bit integers); use a smaller shape, e.g. {text(fitting(op, shape, INDEX_LIMIT))}."]


def host_bytes() -> int:
    """Memory this process can still take on this machine (MemAvailable), 0 when unknown."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0


def memory_problems(op: str, shape: dict, target: str, device_bytes: int | None = None) -> list[str]:
    """Whether a run fits: the float32 tensors on the device, and on the host the inputs, the output and the
    float64 reference that verification computes (about 4x the float32 bytes)."""
    elems = sum(_elements(op, shape).values())
    need_host, avail = 4 * 4 * elems, host_bytes()
    if avail and need_host > avail:
        scale = avail / need_host
        return [f"Running this shape needs about {need_host / 2**30:.1f} GiB of host memory (inputs, output and "
                f"the float64 reference), and this machine has {avail / 2**30:.1f} GiB free; use a smaller shape, "
                f"e.g. {text(fitting(op, shape, max(_elements(op, shape).values()) * scale * 0.9))}."]
    if target == "cuda" and device_bytes and 4 * elems > device_bytes:
        scale = device_bytes / (4 * elems)
        return [f"The tensors need {4 * elems / 2**30:.1f} GiB on the GPU, which has {device_bytes / 2**30:.1f} GiB "
                f"free; use a smaller shape, e.g. {text(fitting(op, shape, max(_elements(op, shape).values()) * scale * 0.9))}."]
    return []
