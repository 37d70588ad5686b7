"""The fpga target: a VTA-style accelerator (GEMM core, input/weight/accumulator buffers, DMA), simulated.

accel.py describes the accelerator, knobs.py its knobs, schedule.py the TensorIR schedules, sim.py the
behavioural simulator that runs the lowered TensorIR and times it with the pipeline model of pipeline.py.
The public calls are re-exported lazily here (kernels/knobs.py imports this package's knobs while it loads).
"""
from __future__ import annotations

_API = {"simulate": "sim", "Report": "sim", "levels": "sim", "time_breakdown": "sim", "lowered_source": "sim",
        "trace": "sim", "tiny": "sim", "run_result": "sim", "DEFAULT": "accel", "Accel": "accel",
        "LEVEL_NAMES": "accel"}

__all__ = sorted(_API)


def __getattr__(name):
    if name in _API:
        import importlib
        return getattr(importlib.import_module(f".{_API[name]}", __name__), name)
    raise AttributeError(name)
