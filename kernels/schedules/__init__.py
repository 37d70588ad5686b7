"""Knobs -> TensorIR: one engine per target, shared by every operator (see cuda.py, cpu.py)."""
from __future__ import annotations

import tvm
from tvm import te
from tvm.s_tir import Schedule

from ..ops import OPS, Shape
from . import cpu, cuda
from ._common import Steps

ENGINES = {"cuda": cuda.schedule, "cpu": cpu.schedule}
# fpga target: a VTA-style accelerator, simulated (kernels/fpga/schedule.py)
from ..fpga import schedule as _fpga  # noqa: E402
ENGINES["fpga"] = _fpga.schedule


def unscheduled(op: str, shape: Shape) -> Schedule:
    return Schedule(tvm.IRModule({"main": te.create_prim_func(OPS[op].define(shape))}))


def create(op: str, shape: Shape, knobs, target: str) -> tuple[Schedule, Steps]:
    """The schedule for (op, shape, knobs, target) and the reasons for each step."""
    steps = Steps()
    sch = unscheduled(op, shape)
    ENGINES[target](sch, knobs.plan(shape), steps)
    return sch, steps
