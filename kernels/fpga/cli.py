"""What `python -m kernels run|traffic --target fpga` print: simulated time and where it goes, bytes per level."""
from __future__ import annotations

import json

from ..knobs import knobs_text
from .accel import LEVEL_NAMES
from .sim import DEVICE, simulate


def print_run(a, shape: dict, knobs, r) -> None:
    """r is the build.Result; the simulator's report (cached) adds the cycle breakdown."""
    rep = simulate(a.op, shape, knobs)
    t = rep.timing
    if a.json:
        print(json.dumps({**r.as_dict(), "preset": a.preset or "", "simulated": True,
                          "cycles": t.as_dict(), "core_ops": rep.core_ops, "instructions": rep.instructions,
                          "accelerator": rep.accel.describe()}))
        return
    print(f"{a.op} {shape} on {DEVICE}: {r.median_ms:.4f} ms SIMULATED ({t.cycles:,} cycles at "
          f"{t.clock_mhz:g} MHz), {r.gflops:.2f} GFLOP/s, {r.gbps:.2f} GB/s, rel. error {r.rel_err:.2e} "
          f"{'ok' if r.ok else 'FAILED'}")
    print(f"  busy cycles: load {t.load_cycles:,}, compute {t.compute_cycles:,}, store {t.store_cycles:,}; "
          f"overlapped {t.overlap_cycles:,} of {t.serial_cycles:,} serial cycles")
    print(f"  bounds: compute {t.compute_bound:,} cycles (MACs / {rep.accel.macs_per_cycle}), memory "
          f"{t.memory_bound:,} cycles (DRAM bytes / {rep.accel.dram_bytes_per_cycle}); pipeline fill "
          f"{t.fill_cycles:,}; {rep.core_ops:,} GEMM-core operations "
          f"({rep.macs / max(rep.core_ops * rep.accel.macs_per_cycle, 1):.0%} of their MACs used)")


def print_traffic(a, shape: dict, knobs) -> None:
    rep = simulate(a.op, shape, knobs)
    out = {"op": a.op, "shape": shape, "target": "fpga", "device": DEVICE, "simulated": True,
           "knobs": knobs_text(knobs), "levels": LEVEL_NAMES, "per_tensor": rep.per_tensor,
           "bytes_per_buffer": rep.per_buffer, "core_ops": rep.core_ops, "instructions": rep.instructions,
           "cycles": rep.timing.as_dict(), "ncu": {}}
    if a.json:
        print(json.dumps(out))
        return
    for t, lv in rep.per_tensor.items():
        print(f"{t:8s} " + "  ".join(f"{LEVEL_NAMES[lvl]}: r {v['read']:,} w {v['write']:,}" for lvl, v in lv.items()))
    for b, v in rep.per_buffer.items():
        print(f"{b:14s} read {v['read']:>14,} B   written {v['write']:>14,} B")
    print(f"GEMM-core operations {rep.core_ops:,}; instructions "
          + ", ".join(f"{k} {v:,}" for k, v in rep.instructions.items()) + " (simulated)")
