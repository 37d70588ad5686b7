"""Targets and the one lowering pipeline that compiling, counting and the tile trace all walk."""
from __future__ import annotations

import functools
import re

import tvm
from tvm import s_tir, tirx

CUDA_ARCH = "sm_90"

# Every CUDA module is compiled by the pinned NVRTC with the pinned flags (kernels/sass/toolchain.py): the
# cubin a GPU loads is the one the machine's view analyses here.
from .sass.toolchain import install_tvm_callback  # noqa: E402
install_tvm_callback()


@functools.lru_cache(maxsize=None)
def cpu_name() -> str:
    """A real CPU name for LLVM: 'native' falls back to generic with the wheel's triple (no AVX at all)."""
    try:
        return cpu_name_of(open("/proc/cpuinfo").read())
    except OSError:
        return "generic"


def cpu_name_of(cpuinfo: str) -> str:
    """cpu_name's rule for any machine's /proc/cpuinfo text (a remote server applies it to its own)."""
    found = re.search(r"^flags\s*:(.*)$", cpuinfo, re.M)
    if found is None:
        return "generic"
    flags = set(found.group(1).split())
    if "avx512f" in flags:
        return "skylake-avx512"
    if "avx2" in flags:
        return "haswell"
    return "x86-64"


def tvm_target(target: str, mcpu: str | None = None, arch: str | None = None,
               mtriple: str = "x86_64-linux-gnu") -> tvm.target.Target:
    """This machine's target; `mcpu`/`arch`/`mtriple` name another machine's device (an RPC server's)."""
    if target == "cpu":
        return tvm.target.Target({"kind": "llvm", "mcpu": mcpu or cpu_name(), "mtriple": mtriple})
    if target == "cuda":
        return tvm.target.Target({"kind": "cuda", "arch": arch or CUDA_ARCH})
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


def compile(mod: tvm.IRModule, target: str, skip: tuple[str, ...] = (), min_blocks: int = 0,
            one_barrier: bool = False, copies_at: float = 0.0, device: tvm.target.Target | None = None):
    """The runtime module; `min_blocks` > 0 gives every CUDA kernel __launch_bounds__(threads, min_blocks);
    `one_barrier` merges a cp.async pipeline's two barriers per reduction tile into one (merge_barriers;
    `copies_at` > 0 issues the copies that far into the tile's compute, bench.variants' copies_at, bench/plans/h200_late_copies.toml). `device` is
    the TVM target of another machine's device (kernels/remote.py); default: this machine's."""
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(skip), config=CONFIG.get(target, {})):
        return tvm.compile(mod, target=device or tvm_target(target),
                           tir_pipeline=_device_pipeline(min_blocks, one_barrier, copies_at)
                           if min_blocks or one_barrier else "default")


@functools.lru_cache(maxsize=None)
def _device_pipeline(blocks: int, one_barrier: bool, copies_at: float = 0.0) -> str:
    """TVM's default pipeline with two device-side additions: the kernels marked
    `tirx.launch_bounds_min_blocks_per_sm` (which CUDA codegen writes as the second argument of
    __launch_bounds__), and merge_barriers on every kernel. Registered once per combination, by name, because
    tvm.compile takes a custom TIR pipeline by name."""
    from tvm.tirx import compilation_pipeline as cp

    @tvm.transform.module_pass(opt_level=0, name="KernelLabDevice")
    def mark(mod, _ctx):
        funcs = {}
        for gv, f in mod.functions.items():
            if isinstance(f, tirx.PrimFunc):
                if blocks:
                    f = f.with_attr("tirx.launch_bounds_min_blocks_per_sm", blocks)
                if one_barrier:
                    f = f.with_body(merge_barriers(f.body, copies_at))
            funcs[gv] = f
        return tvm.IRModule(funcs, attrs=mod.attrs)

    def factory():
        main, host, device = cp.get_tir_pipeline("default")
        return main, host, lambda: tvm.ir.transform.Sequential([mark, device()])

    name = f"kernel_lab.device_{blocks}_{int(one_barrier)}_{copies_at:g}"
    cp.register_tir_pipeline(name, factory)
    return name


def merge_barriers(stmt, copies_at: float = 0.0):
    """One barrier per reduction tile instead of two, in every cp.async software pipeline.

    TVM's pipelined loop body is   [barrier; issue the copies of tile k+S-1; commit]
                                    [wait until S-1 groups are in flight; barrier; compute tile k]
    The first barrier keeps the copies off the buffer that tile k-1 was computed from (S stages), the second
    makes tile k's copies visible. Rewritten:
                                    [wait until S-2 groups are in flight (tile k has landed); barrier;
                                     issue the copies of tile k+S-1; commit; compute tile k]
    The one barrier does both jobs: every thread has finished computing tile k-1 when it passes it, and
    tile k is in shared memory. The copies still overlap tile k's compute, as before. `copies_at` in (0, 1]
    issues them that far into the compute's statements instead (1: after it, which only overlaps anything
    with S >= 3: with 2 stages the next iteration would wait for them at once). Where TVM unrolled the loop,
    each tile's pair is rewritten the same way. Anything else (not exactly one barrier in each part) is left
    as it is."""
    from tvm.tirx import stmt as S
    from ._tirpy import children, is_sync

    def count_syncs(s) -> int:
        return int(is_sync(s)) + sum(count_syncs(c) for c in children(s))

    def drop_first_sync(s):
        """s without its first barrier, searched through sequences and attributes only; None if none."""
        if is_sync(s):
            return S.Evaluate(0)
        if isinstance(s, S.SeqStmt):
            for i, c in enumerate(s.seq):
                d = drop_first_sync(c)
                if d is not None:
                    rest = [*s.seq[:i], *([] if is_sync(c) else [d]), *s.seq[i + 1:]]
                    return (S.SeqStmt(rest) if len(rest) > 1 else rest[0]) if rest else S.Evaluate(0)
            return None
        if isinstance(s, S.AttrStmt):
            d = drop_first_sync(s.body)
            return None if d is None else S.AttrStmt(s.node, s.attr_key, s.value, d)
        return None

    def merged(commit, wait):
        """The (commit, wait) pair of one reduction tile as one wait scope, or None if it is not one."""
        if not (isinstance(commit, S.AttrStmt) and commit.attr_key == "async_commit_queue_scope"
                and isinstance(wait, S.AttrStmt) and wait.attr_key == "async_wait_queue_scope"
                and isinstance(wait.body, S.AttrStmt) and wait.body.attr_key == "async_wait_inflight_count"
                and count_syncs(commit) == 1 and count_syncs(wait) == 1 and int(wait.body.value) >= 1):
            return None
        rest = wait.body.body
        first = rest.seq[0] if isinstance(rest, S.SeqStmt) and len(rest.seq) else rest
        if not is_sync(first):          # the compute must start with its barrier
            return None
        copies = drop_first_sync(commit.body)
        issue = S.AttrStmt(commit.node, commit.attr_key, commit.value, copies)
        compute = list(rest.seq[1:]) if isinstance(rest, S.SeqStmt) else []
        at = round(copies_at * len(compute))
        inner = S.SeqStmt([first, *compute[:at], issue, *compute[at:]])
        count = S.AttrStmt(wait.body.node, wait.body.attr_key, int(wait.body.value) - 1, inner)
        return S.AttrStmt(wait.node, wait.attr_key, wait.value, count)

    def visit(s):
        if isinstance(s, S.SeqStmt):
            new = [visit(c) for c in s.seq]
            out, i = [], 0
            while i < len(new):         # a loop body, or the same pair again and again where TVM unrolled it
                m = merged(new[i], new[i + 1]) if i + 1 < len(new) else None
                out.append(m if m is not None else new[i])
                i += 2 if m is not None else 1
            if len(out) == len(s.seq) and all(a.same_as(b) for a, b in zip(out, s.seq)):
                return s
            return S.SeqStmt(out) if len(out) > 1 else out[0]
        if isinstance(s, S.AttrStmt):
            b = visit(s.body)
            return s if b.same_as(s.body) else S.AttrStmt(s.node, s.attr_key, s.value, b)
        if isinstance(s, S.IfThenElse):
            t = visit(s.then_case)
            e = visit(s.else_case) if s.else_case is not None else None
            if t.same_as(s.then_case) and (e is None or e.same_as(s.else_case)):
                return s
            return S.IfThenElse(s.condition, t, e)
        if isinstance(s, S.For):
            b = visit(s.body)
            if b.same_as(s.body):
                return s
            return S.For(s.loop_var, s.min, s.extent, s.kind, b, s.thread_binding, s.annotations, s.step)
        return s

    return visit(stmt)


def passes(skip: tuple[str, ...] = (), one_barrier: bool = False):
    """tvm/s_tir/pipeline.py's default pipeline up to SplitHostDevice: one flat PrimFunc to walk (with
    merge_barriers after the barriers are placed, as compile() applies it to the device kernels)."""
    return [p for p in _passes() if p.info.name not in skip] + ([_MERGE] if one_barrier else [])


@tirx.transform.prim_func_pass(opt_level=0, name="MergeBarriers")
def _MERGE(f, _mod, _ctx):
    return f.with_body(merge_barriers(f.body))


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


def lower(mod: tvm.IRModule, target: str, skip: tuple[str, ...] = (), one_barrier: bool = False) -> tvm.IRModule:
    with tvm_target(target):
        return tvm.ir.transform.Sequential(passes(skip, one_barrier))(mod)
