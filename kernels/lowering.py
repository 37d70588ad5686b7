"""Targets and the one lowering pipeline that compiling, counting and the tile trace all walk."""
from __future__ import annotations

import functools
import re

import tvm
from tvm import s_tir, tirx

CUDA_ARCH = "sm_90"


@functools.lru_cache(maxsize=None)
def cpu_name() -> str:
    """A real CPU name for LLVM: 'native' falls back to generic with the wheel's triple (no AVX at all)."""
    try:
        flags = set(re.search(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M).group(1).split())
    except (OSError, AttributeError):
        return "generic"
    if "avx512f" in flags:
        return "skylake-avx512"
    if "avx2" in flags:
        return "haswell"
    return "x86-64"


def tvm_target(target: str) -> tvm.target.Target:
    if target == "cpu":
        return tvm.target.Target({"kind": "llvm", "mcpu": cpu_name(), "mtriple": "x86_64-linux-gnu"})
    if target == "cuda":
        return tvm.target.Target({"kind": "cuda", "arch": CUDA_ARCH})
    if target == "fpga":    # kernels/fpga: nothing is compiled; the lowered TensorIR runs in the simulator.
        return tvm.target.Target({"kind": "c"})     # a source-only kind: the pass list runs target-neutral
    raise ValueError(target)


def disabled(target: str, knobs, shape) -> tuple[str, ...]:
    """Passes left out for this schedule, in compiling and in counting alike. On the CPU, TVM 0.27's
    LoopPartition miscompiles some loop nests with remainders (a negative index into W, seen with a
    reduction split that does not divide N); it only pays off where tiles divide, so it runs only there."""
    from .knobs import has_remainder
    if target == "cpu" and has_remainder(knobs, shape):
        return ("s_tir.LoopPartition",)
    return ()


# cp.async for the copies a schedule marks async (software_pipeline_async_stages); nothing else changes.
CONFIG = {"cuda": {"tirx.use_async_copy": True}}


def compile(mod: tvm.IRModule, target: str, skip: tuple[str, ...] = ()):
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(skip), config=CONFIG.get(target, {})):
        return tvm.compile(mod, target=tvm_target(target))


def passes(skip: tuple[str, ...] = ()):
    """tvm/s_tir/pipeline.py's default pipeline up to SplitHostDevice: one flat PrimFunc to walk."""
    return [p for p in _passes() if p.info.name not in skip]


def _passes():
    return [
        s_tir.transform.CanonicalizeLoop(), s_tir.transform.LowerCrossThreadReduction(),
        s_tir.transform.LowerInitBlock(), s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.LiftThreadBinding(),
        s_tir.transform.ManifestSharedMemoryLocalStage(), s_tir.transform.CompactBufferAllocation(),
        s_tir.transform.LowerAutoCopy(), s_tir.transform.UnifyThreadBinding(), s_tir.transform.LowerMatchBuffer(),
        s_tir.transform.StmtSimplify(), s_tir.transform.InjectPermutedLayout(),
        s_tir.transform.AnnotateIrregularLoop(), s_tir.transform.InjectSoftwarePipeline(),
        s_tir.transform.TransformMmaBufferLayout(), s_tir.transform.LowerOpaqueBlock(),
        tirx.transform.FlattenBuffer(), tirx.transform.NarrowDataType(32), s_tir.transform.LoopPartition(),
        tirx.transform.VectorizeLoop(True), s_tir.transform.InjectVirtualThread(),
        s_tir.transform.InjectDoubleBuffer(), tirx.transform.StorageRewrite(), tirx.transform.UnrollLoop(),
        tirx.transform.StmtSimplify(), tirx.transform.RemoveNoOp(), s_tir.transform.ThreadSync("shared"),
    ]


def lower(mod: tvm.IRModule, target: str, skip: tuple[str, ...] = ()) -> tvm.IRModule:
    with tvm_target(target):
        return tvm.ir.transform.Sequential(passes(skip))(mod)
