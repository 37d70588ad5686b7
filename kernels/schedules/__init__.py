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


def definition(op: str, shape: Shape, plan=None) -> list:
    """The operator's te tensors; with a CUDA plan that pads to whole tiles (pad_tiles), its padded definition
    where it has one (pad_einsum pads the others in the schedule)."""
    o = OPS[op]
    if (o.define_padded is not None and plan is not None and getattr(plan, "target", None) == "cuda"
            and getattr(plan, "pad", False)):
        return o.define_padded(shape, plan.tiles, plan.splits)
    return o.define(shape)


def unscheduled(op: str, shape: Shape, plan=None) -> Schedule:
    return Schedule(tvm.IRModule({"main": te.create_prim_func(definition(op, shape, plan))}))


def create(op: str, shape: Shape, knobs, target: str) -> tuple[Schedule, Steps]:
    """The schedule for (op, shape, knobs, target) and the reasons for each step."""
    steps = Steps()
    plan = knobs.plan(shape)
    sch = unscheduled(op, shape, plan)
    ENGINES[target](sch, plan, steps)
    return sch, steps
