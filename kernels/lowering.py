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


def compile(mod: tvm.IRModule, target: str, skip: tuple[str, ...] = (), min_blocks: int = 0):
    """The runtime module; `min_blocks` > 0 gives every CUDA kernel __launch_bounds__(threads, min_blocks)."""
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(skip), config=CONFIG.get(target, {})):
        return tvm.compile(mod, target=tvm_target(target),
                           tir_pipeline=_min_blocks_pipeline(min_blocks) if min_blocks else "default")


@functools.lru_cache(maxsize=None)
def _min_blocks_pipeline(blocks: int) -> str:
    """TVM's default pipeline, with the device kernels marked `tirx.launch_bounds_min_blocks_per_sm`, which
    CUDA codegen writes as the second argument of __launch_bounds__ (registered once per value, by name,
    because tvm.compile takes a custom TIR pipeline by name)."""
    from tvm.tirx import compilation_pipeline as cp

    @tvm.transform.module_pass(opt_level=0, name="MinBlocksPerSM")
    def mark(mod, _ctx):
        return tvm.IRModule({gv: f.with_attr("tirx.launch_bounds_min_blocks_per_sm", blocks)
                             if isinstance(f, tirx.PrimFunc) else f for gv, f in mod.functions.items()},
                            attrs=mod.attrs)

    def factory():
        main, host, device = cp.get_tir_pipeline("default")
        return main, host, lambda: tvm.ir.transform.Sequential([mark, device()])

    name = f"kernel_lab.min_blocks_{blocks}"
    cp.register_tir_pipeline(name, factory)
    return name


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
