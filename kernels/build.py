"""Compile (cached), verify against the float64 reference, time; every run returns a frozen Result."""
from __future__ import annotations

import datetime as _dt
import contextlib
import functools
import math
import os
import platform
import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import tvm

from . import lowering
from .knobs import knobs_text
from .ops import OPS, Shape, rel_error
from .schedules import create

TOLERANCE = 1e-4


def _physical_cores() -> int:
    """Cores this process may use, not hardware threads (1 per core unless /proc/cpuinfo says otherwise)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        info = open("/proc/cpuinfo").read()
        smt = int(re.search(r"^siblings\s*:\s*(\d+)", info, re.M).group(1)) // \
            int(re.search(r"^cpu cores\s*:\s*(\d+)", info, re.M).group(1))
    except (OSError, AttributeError, ZeroDivisionError):
        smt = 1
    return max(1, cpus // max(smt, 1))


# TVM's thread pool assumes two hardware threads per x86 core and starts half as many workers as there
# are logical CPUs: on a machine without SMT (this 2-core one) 'parallel' then ran on one core. Unless the
# user chose, use one worker per physical core. Read when the pool starts, i.e. at the first kernel call.
os.environ.setdefault("TVM_NUM_THREADS", str(_physical_cores()))
# One lock per device: two visitors of the app never time over each other.
DEVICE_LOCKS = {"cpu": threading.Lock(), "cuda": threading.Lock()}


@dataclass(frozen=True)
class Result:
    op: str
    shape: dict
    target: str
    device: str
    knobs: str
    median_ms: float
    spread_ms: float            # interquartile range of the repeats
    repeats: int
    gflops: float
    gbps: float
    rel_err: float
    ok: bool
    ref: str | None             # the reference library timed on the same machine (None: not timed, see note)
    ref_ms: float | None
    vs_ref: float | None        # reference time / kernel time: > 1 means the kernel is faster
    compile_s: float
    date: str
    versions: str
    note: str = ""              # what the numbers leave out (e.g. a remote server that cannot time the reference)
    timer: str = ""             # how the kernel was timed (kernel_timer): CUDA graph replay or TVM's time_evaluator

    def as_dict(self) -> dict:
        return asdict(self)


def target_available(target: str) -> str | None:
    """None when the target can run here, else one sentence saying why not."""
    if target in ("cpu", "fpga"):       # fpga: the simulator (kernels/fpga) runs anywhere
        return None
    if target == "cuda":
        try:
            if tvm.cuda(0).exist:
                return None
        except Exception:       # noqa: BLE001 - a runtime without CUDA raises its own errors
            pass
        return "This machine has no CUDA GPU, so CUDA kernels can be shown and simulated here but not timed."
    return f"Unknown target '{target}'."


def device_name(target: str) -> str:
    if target == "fpga":
        from .fpga.sim import DEVICE
        return DEVICE
    if target == "cuda":
        try:
            dev = tvm.cuda(0)
            # `exist` goes through the CUDA runtime, which initialises the driver; the name is read with the
            # driver API, which answers CUDA_ERROR_NOT_INITIALIZED until something has initialised it
            return dev.device_name if dev.exist else "CUDA GPU"
        except Exception:       # noqa: BLE001
            return "CUDA GPU"
    model = platform.processor() or "CPU"
    try:
        model = re.search(r"^model name\s*:\s*(.*)$", open("/proc/cpuinfo").read(), re.M).group(1)
    except (OSError, AttributeError):
        pass
    return f"{model} ({os.cpu_count()} cores)"


def free_device_bytes(target: str) -> int | None:
    """Free memory of the GPU (None on other targets, or where it cannot be read)."""
    if target != "cuda":
        return None
    torch = _torch()
    try:
        return int(torch.cuda.mem_get_info()[0]) if torch is not None and torch.cuda.is_available() else None
    except Exception:       # noqa: BLE001
        return None


def versions() -> str:
    out = f"tvm {tvm.__version__}, numpy {np.__version__}"
    torch = _torch()
    if torch is not None:
        out += f", torch {torch.__version__}"
    return out


@functools.lru_cache(maxsize=256)
def compiled(op: str, shape_items: tuple, knobs, target: str):
    """(executable, runtime module, compile seconds) for one schedule; cached by (op, shape, knobs, target)."""
    t0 = time.perf_counter()
    ex = executable(op, dict(shape_items), knobs, target)
    mod = ex.jit() if target_available(target) is None else None
    return ex, mod, time.perf_counter() - t0


def executable(op: str, shape: Shape, knobs, target: str, device: tvm.target.Target | None = None):
    """The compiled (not yet loaded) schedule; `device` names another machine's device (kernels/remote.py)."""
    sch, _ = create(op, shape, knobs, target)
    return lowering.compile(sch.mod, target, lowering.disabled(target, knobs, shape), getattr(knobs, "min_blocks", 0),
                            getattr(knobs, "one_barrier", False), device=device)


def source(op: str, shape: Shape, knobs, target: str, ir: str = "tir") -> str:
    """TensorIR (the schedule's TVMScript), CUDA C, or LLVM assembly/IR of the compiled kernel."""
    if target == "fpga" and ir != "tir":        # no device code: the lowered TensorIR is what the simulator runs
        from .fpga.sim import lowered_source
        if ir != "lowered":
            raise ValueError(ir)
        return lowered_source(op, shape, knobs)
    sch, _ = create(op, shape, knobs, target)
    if ir == "tir":
        return sch.mod.script()
    if ir == "lowered":
        return lowering.lower(sch.mod, target, lowering.disabled(target, knobs, shape),
                              getattr(knobs, "one_barrier", False)).script()
    ex, _, _ = compiled(op, tuple(shape.items()), knobs, target)
    if ir == "cuda":
        return ex.mod.imports[0].inspect_source()
    if ir == "llvm":
        return ex.mod.inspect_source("asm")
    if ir == "llvm-ir":
        return ex.mod.inspect_source("ll")
    raise ValueError(ir)


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def _tvm_dev(target: str):
    return tvm.cuda(0) if target == "cuda" else tvm.cpu(0)


def verify(op: str, shape: Shape, knobs, target: str, rng=None) -> tuple[float, list, object]:
    """rel. error on fresh random inputs, the output poisoned with NaN first; also returns the device arrays."""
    if target == "fpga":                        # executed by the simulator (kernels/fpga), not compiled
        from .fpga.sim import verify as fpga_verify
        return fpga_verify(op, shape, knobs, rng)
    _, mod, _ = compiled(op, tuple(shape.items()), knobs, target)
    return call_verified(op, shape, mod, _tvm_dev(target), target, rng)


def call_verified(op: str, shape: Shape, mod, dev, target: str, rng=None, checked=None) -> tuple[float, list, object]:
    """One call of `mod` on `dev` (here, or a remote device: inputs made here, the output copied back), its
    output poisoned with NaN first: (rel. error against the float64 reference, device arrays, inputs).
    `checked` = (inputs, float64 reference) drawn once for several kernels (the tuner's candidates)."""
    o = OPS[op]
    xs, ref = checked or (o.random_inputs(shape, rng or np.random.default_rng()), None)
    args = [tvm.runtime.tensor(x, dev) for x in xs]
    out = tvm.runtime.tensor(np.full(o.output_shape(shape), np.nan, "float32"), dev)
    mod["main"](*args, out)
    with one_blas_thread():
        return rel_error(out.numpy(), _reference_float64(op, target, xs) if ref is None else ref), args + [out], xs


def fresh_check(op: str, shape: Shape, target: str, rng=None) -> tuple[list, np.ndarray]:
    """Random inputs drawn now and their float64 reference, for call_verified(checked=...)."""
    xs = OPS[op].random_inputs(shape, rng or np.random.default_rng())
    with one_blas_thread():
        return xs, _reference_float64(op, target, xs)


def one_blas_thread():
    """numpy's checks on one BLAS thread. After a call OpenBLAS's worker spins on the other core for a while,
    and a parallel TVM kernel timed then runs its second half in scheduler ticks: in a tune on this 2-core
    machine a 0.013 ms kernel took 2-4 ms per call and the ranking of candidates came out upside down (with
    OPENBLAS_NUM_THREADS=1 the same sequence timed 0.013 ms throughout). The checks are never timed."""
    from threadpoolctl import threadpool_limits
    return threadpool_limits(1, user_api="blas")


def _reference_float64(op: str, target: str, xs: list[np.ndarray]) -> np.ndarray:
    """The float64 reference: numpy, or torch in float64 on the GPU when it is there (same math, faster)."""
    torch = _torch() if target == "cuda" else None
    if torch is None or not torch.cuda.is_available():
        return OPS[op].reference(*xs)
    import torch.nn.functional as F
    t = [torch.from_numpy(x).cuda().double() for x in xs]
    if op == "gemm":
        r = t[0] @ t[1]
    elif op == "conv1d":
        r = F.conv1d(t[0].view(1, 1, -1), t[1].flip(0).view(1, 1, -1), padding=xs[1].shape[0] - 1).view(-1)
    else:
        k = xs[1].shape[-1]
        r = F.conv2d(t[0], t[1], padding=(k - 1) // 2, groups=xs[0].shape[1])
        if op == "dwsep_conv2d":
            r = F.conv2d(r, t[2])
    return r.cpu().numpy()


def dlight_module(op: str, shape: Shape, target: str = "cuda"):
    """TVM's rule-based default GPU schedule (s_tir.dlight) for the same operator: 'what TVM does without a human'."""
    from tvm.s_tir import dlight as dl
    from .schedules import unscheduled
    tgt = lowering.tvm_target(target)
    with tgt:
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GeneralReduction(), dl.gpu.Fallback())(
            unscheduled(op, shape).mod)
    return tvm.compile(mod, target=tgt).jit()


def time_module(op: str, shape: Shape, mod, target: str, repeat: int = 5) -> tuple[float, float, float, str]:
    """(median ms, IQR ms, rel. error, how it was timed) of any compiled module taking the operator's arguments."""
    dev = _tvm_dev(target)
    rel, args, _ = call_verified(op, shape, mod, dev, target)
    how, times = _timed(mod, dev, args, repeat)
    q1, q3 = np.percentile(times, [25, 75])
    return float(np.median(times)), float(q3 - q1), rel, how


def _timed(mod, dev, args, repeat: int) -> tuple[str, list[float]]:
    """(how, `repeat` repeats by kernel_timer)."""
    how, once = kernel_timer(mod, dev, args)
    return how, [once() for _ in range(repeat)]


def _time_tvm(mod, dev, args, repeat: int) -> list[float]:
    return _timed(mod, dev, args, repeat)[1]


def kernel_timer(mod, dev, args, settle: bool = True, warmed: bool = False) -> tuple[str, Callable[[], float]]:
    """(how, one repeat -> ms per call) for a compiled module called on `args`, warmed up. On a GPU where torch
    can capture CUDA graphs: the module's calls captured in a graph (its launches on torch's stream through
    tvm_ffi) and replayed back to back, as the vendor library is timed (reference_timer), so that neither side's
    time holds a host's launch; TVM's time_evaluator had a floor of about 3.9 us a call on the H100 where the
    vendor's graph replays went to 3.2. On this machine's CPU: the module called from Python back to back, as
    numpy is (reference_timer), so that each side's time holds one call from Python (time_evaluator's loop in C++
    left that out of ours alone: at conv1d 100x7 0.056 us a call, 0.20 from Python, numpy's 2.0). Elsewhere (a GPU without torch, a
    refused capture, a device of an RPC session): TVM's time_evaluator. A repeat is at least 10 ms of calls; where
    one call fills it, the calibrating call is the first repeat. On the CPU `settle` waits SETTLE_S first (after
    numpy's BLAS threads; the tuner's child runs none), and `warmed` says the caller has just called the module on
    `args` (its check), which is then the warm-up of a call of LONG_CALL_S or more."""
    if dev.dlpack_device_type() == tvm.cpu(0).dlpack_device_type():
        main = mod["main"]

        def call() -> None:
            main(*args)
        # after numpy's matmul OpenBLAS's workers spin on the cores for a while, and a parallel kernel's call then
        # waits a scheduler tick (a held-out CPU batch right after the library's timing: GEMM best 4-8 ms a call,
        # 0.058 ms settled; data/cpu_suite_alike.json): they go idle first, and every call of a repeat is counted
        if settle:
            time.sleep(SETTLE_S)
        return CPU_TIMER, _repeater(call, _no_sync, warm=not warmed, first=True)
    if dev.dlpack_device_type() == tvm.cuda(0).dlpack_device_type():
        torch = _torch()
        if torch is not None and torch.cuda.is_available():
            import tvm_ffi
            main = mod["main"]
            replay = _graphed(torch, lambda: main(*args), tvm_ffi.use_torch_stream)
            if replay is not None:
                return GRAPH_TIMER, _repeater(replay, torch.cuda.synchronize, first=True)
    return "TVM time_evaluator", _evaluator(mod, dev, args)


def _evaluator(mod, dev, args) -> Callable[[], float]:
    """One repeat (at least 10 ms of calls) of TVM's time_evaluator, warmed up: () -> ms per call."""
    f = mod.time_evaluator("main", dev, number=1, repeat=1, min_repeat_ms=10)
    f(*args)                                       # warm-up
    return lambda: f(*args).results[0] * 1e3


def _time_evaluator_ms(mod, dev, args, repeat: int) -> list[float]:
    """`repeat` repeats by TVM's time_evaluator alone, as every kernel was timed before kernel_timer (for the
    comparison of the two, bench.variants timers)."""
    once = _evaluator(mod, dev, args)
    return [once() for _ in range(repeat)]


def _calls_per_repeat(fn, sync, warm: bool = True) -> tuple[int, float]:
    """Warm up `fn`, then how many back-to-back calls fill at least 10 ms (as time_evaluator's repeats do), and the
    ms per call of the one call timed to say so. `warm` False: the caller's own call was the warm-up; then a first
    call of LONG_CALL_S or more is timed as it is (waking a thread pool's workers, a scheduler tick at most, is
    under 4% of it), and a shorter one warms up for the next."""
    if warm:
        fn(); sync()
    took = _one_call(fn, sync)
    if not warm and took < LONG_CALL_S:
        took = _one_call(fn, sync)
    return max(1, int(0.01 / max(took, 1e-7))), took / getattr(fn, "calls", 1) * 1e3


def _one_call(fn, sync) -> float:
    """Seconds of one call of fn, synchronized."""
    sync()
    t0 = time.perf_counter()
    fn(); sync()
    return time.perf_counter() - t0


LONG_CALL_S = 0.1


def _one_repeat(fn, n: int, sync) -> float:
    """ms per call over n back-to-back calls, synchronized once at the end so launch queues stay full (a graph
    replay of several calls, _graphed, counts as its `calls`)."""
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / (n * getattr(fn, "calls", 1)) * 1e3


def _repeater(fn, sync, warm: bool = True, first: bool = False) -> Callable[[], float]:
    """() -> ms per call of one repeat of `fn` (warmed up; as many back-to-back calls as fill 10 ms); its `calls`
    is fn's (a graph replay's calls). With `first`, where one call fills a repeat, the call timed to size the
    repeats is the first repeat (a slow candidate of a search, seconds a call, is not called again for it);
    `warm` False: the caller has warmed fn up."""
    n, took = _calls_per_repeat(fn, sync, warm)
    made = [took] if first and n == 1 else []

    def once() -> float:
        return made.pop() if made else _one_repeat(fn, n, sync)

    def wake() -> None:
        fn(); sync()
    once.calls, once.wake = getattr(fn, "calls", 1), wake
    return once


def _time_host(fn, repeat: int, sync=lambda: None) -> list[float]:
    """Median-ready repeats of `fn`, each at least 10 ms of back-to-back calls."""
    once = _repeater(fn, sync)
    return [once() for _ in range(repeat)]


# After a parallel call, the library's worker threads spin for a while before they sleep (OpenBLAS's and
# TVM's alike). On a 2-core machine the spinning threads of one side took the second core from the other:
# GEMM best timed 11.9 ms right after numpy and 6.1 ms after a pause. Each side waits this long first.
SETTLE_S = 0.2


def _time_interleaved(mod, dev, args, ref, repeat: int) -> tuple[str, list[float], list[float] | None]:
    """Kernel repeats (kernel_timer) and reference repeats (>= 10 ms of back-to-back calls each) alternate,
    so load from other processes on the machine, which comes and goes, weighs on both sides of the ratio;
    on the CPU each side starts after the other's worker threads have gone idle (SETTLE_S). Also says how the
    kernel was timed."""
    how, once = kernel_timer(mod, dev, args)
    if ref is None:
        return (how, *alternate(once, None, repeat, settle=False))
    _, fn, sync = ref
    return (how, *alternate(once, _repeater(fn, sync), repeat,
                            settle=dev.dlpack_device_type() == tvm.cpu(0).dlpack_device_type()))


def alternate(once, reference, repeat: int, settle: bool) -> tuple[list[float], list[float] | None]:
    """`repeat` kernel repeats (once: () -> ms per call), each followed by one repeat of `reference` (() -> ms;
    None: the kernel alone). `settle` (CPU): before each side SETTLE_S, for the other side's threads to go idle,
    then one untimed call of this side (wake), for its own threads to wake: after a pause the first call of a
    parallel library pays their wake-up (data/cpu_timer_wake.json, GEMM 192x256x253 on this CPU: numpy 0.567 ms a
    call in repeats after a pause, 0.189 with the call first; ours 0.090 and 0.087)."""
    if reference is None:
        return [once() for _ in range(repeat)], None

    def settled(side) -> float:
        if settle:
            time.sleep(SETTLE_S)
            wake(side)
        return side()
    times, ref_times = [], []
    for _ in range(repeat):
        times.append(settled(once))
        ref_times.append(settled(reference))
    return times, ref_times


def wake(once) -> None:
    """One untimed call of the side a repeater times (its `wake`, where it has one: _repeater's, a server's)."""
    getattr(once, "wake", lambda: None)()


def reference_timer(op: str, target: str, xs: list[np.ndarray], fill: bool = True):
    """(name, zero-argument callable, sync) for the library the kernel is compared with on this target. On a GPU
    the callable replays a CUDA graph of the library's call; `fill`=False keeps it to one call a graph (and times
    nothing while building it: a profiler sees only the warm-up and the calls made)."""
    o = OPS[op]
    if target == "cpu":
        name = {"gemm": "numpy matmul (OpenBLAS)", "conv1d": "numpy.convolve"}.get(op, "numpy (float32)")
        return name, (lambda: o.reference(*xs, dtype="float32")), (lambda: None)
    torch = _torch()
    if torch is None or not torch.cuda.is_available():
        return None
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    t = [torch.from_numpy(x).cuda() for x in xs]
    k = xs[1].shape[-1]
    c = xs[0].shape[1] if xs[0].ndim == 4 else 1
    if op == "gemm":
        name, fn = "cuBLAS (torch.matmul, TF32 off)", lambda: torch.matmul(t[0], t[1])
    elif op == "conv1d":
        a, w = t[0].view(1, 1, -1), t[1].flip(0).view(1, 1, -1)
        name, fn = "cuDNN (F.conv1d)", lambda: F.conv1d(a, w, padding=k - 1)
    elif op == "dwconv2d":
        name, fn = "cuDNN (F.conv2d groups=C)", lambda: F.conv2d(t[0], t[1], padding=(k - 1) // 2, groups=c)
    else:
        name = "cuDNN (depthwise + pointwise F.conv2d)"
        fn = lambda: F.conv2d(F.conv2d(t[0], t[1], padding=(k - 1) // 2, groups=c), t[2])  # noqa: E731
    replay = _graphed(torch, fn, fill=fill)
    if replay is not None:      # GPU time of the library call, without Python's launch overhead
        return f"{name}, {GRAPH_TIMER}", replay, torch.cuda.synchronize
    return name, fn, torch.cuda.synchronize


# A graph replayed for a short kernel holds this many ms of its calls (at most GRAPH_CALLS of them), so that the
# replay's own launch, about 3 us on the H100, is shared by them: the time is the device's time per call.
GRAPH_FILL_MS = 0.2
GRAPH_CALLS = 64
GRAPH_TIMER = "CUDA graph replay"
CPU_TIMER = "calls from Python back to back"


def _no_sync() -> None:
    """A CPU kernel has returned when its call has."""


def _graphed(torch, fn, stream=contextlib.nullcontext, fill: bool = True):
    """A function replaying fn's calls captured in one CUDA graph (after warm-up on a side stream): one call where
    it lasts GRAPH_FILL_MS or more, else as many back to back as fill GRAPH_FILL_MS (its `calls` attribute says
    how many; _one_repeat divides by them; with `fill` False always one). `stream` puts launches that are not
    torch's own on torch's current stream (tvm_ffi.use_torch_stream for a TVM module). None when capture is
    refused."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s), stream():
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        replay = _capture(torch, fn, 1, stream)
        if not fill:
            return replay
        one = _repeater(replay, torch.cuda.synchronize)()
        calls = min(GRAPH_CALLS, max(1, math.ceil(GRAPH_FILL_MS / max(one, 1e-6))))
        return replay if calls == 1 else _capture(torch, fn, calls, stream)
    except Exception:       # noqa: BLE001 - fall back to plain calls, and the name says so
        return None


def _capture(torch, fn, calls: int, stream):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), stream():
        for _ in range(calls):
            fn()

    def replay():
        g.replay()
    replay.calls = calls
    return replay


def run(op: str, shape: Shape, knobs, target: str, repeat: int = 5, with_reference: bool = True) -> Result:
    """Compile, verify, time the kernel and the reference library in this process; medians after warm-up."""
    why = target_available(target)
    if why:
        raise RuntimeError(why)
    if target == "fpga":                        # simulated time (cycles / clock), labelled so in Result.device
        from .fpga.sim import run_result
        return run_result(op, shape, knobs)
    _, mod, compile_s = compiled(op, tuple(shape.items()), knobs, target)
    rel, args, xs = verify(op, shape, knobs, target)
    with DEVICE_LOCKS.setdefault(target, threading.Lock()):
        ref = reference_timer(op, target, xs) if with_reference else None
        how, times, ref_times = _time_interleaved(mod, _tvm_dev(target), args, ref, repeat)
    return result(op, shape, knobs, target, device_name(target), rel, times, ref[0] if ref else "", ref_times,
                  repeat, compile_s, timer=how)


def result(op: str, shape: Shape, knobs, target: str, device: str, rel: float, times: list[float],
           ref: str | None, ref_times: list[float] | None, repeat: int, compile_s: float, note: str = "",
           timer: str = "") -> Result:
    """The Result of one run from its repeats (ms, here or on a remote machine): medians, IQR, rates, ratio."""
    o = OPS[op]
    med = float(np.median(times))
    q1, q3 = np.percentile(times, [25, 75])
    ref_ms = float(np.median(ref_times)) if ref_times else None
    return Result(
        op=op, shape=dict(shape), target=target, device=device, knobs=knobs_text(knobs),
        median_ms=med, spread_ms=float(q3 - q1), repeats=repeat,
        gflops=o.flops(shape) / med / 1e6, gbps=o.min_bytes(shape) / med / 1e6,
        rel_err=rel, ok=bool(rel < TOLERANCE), ref=ref, ref_ms=ref_ms,
        vs_ref=(ref_ms / med) if ref_ms else None, compile_s=compile_s,
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), versions=versions(), note=note,
        timer=timer,
    )
