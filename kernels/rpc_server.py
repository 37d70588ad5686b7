"""TVM's RPC server plus what Kernel Lab calls on it: the server's device, and the reference library timed there.

    python -m kernels.rpc_server --tracker HOST:PORT --key KEY [--host 0.0.0.0] [--port 9090]

A plain `python -m tvm.exec.rpc_server` serves kernels too; only the reference library is then not timed on the
server (kernels/remote.py says so in the run's note instead of comparing with this machine's library).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
from pathlib import Path

import numpy as np

DEVICE_INFO = "kernel_lab.device_info"
REFERENCE_NAME = "kernel_lab.reference_name"
REFERENCE_MS = "kernel_lab.reference_ms"
KERNEL_TIMER = "kernel_lab.kernel_timer"
KERNEL_MS = "kernel_lab.kernel_ms"
KERNEL_WAKE = "kernel_lab.kernel_wake"
REFERENCE_WAKE = "kernel_lab.reference_wake"

# One reference timer per (op, target, shape) in a session: inputs made, library warmed up and its calls per
# repeat counted once, so each reference_ms call times repeats and nothing else.
_TIMERS: dict[tuple[str, str, str], tuple | None] = {}


def device_info() -> str:
    """JSON: this machine's CPU (named as build.device_name does), the LLVM CPU name lowering.cpu_name picks,
    the triple's machine, and the GPU with its arch when CUDA is here."""
    from . import build, lowering
    info = {"cpu": build.device_name("cpu"), "mcpu": lowering.cpu_name(), "machine": platform.machine()}
    if build.target_available("cuda") is None:
        import tvm
        info["gpu"] = build.device_name("cuda")
        info["arch"] = "sm_" + tvm.cuda(0).compute_version.replace(".", "")
    return json.dumps(info)


def _timer(op: str, target: str, shape_json: str):
    key = (op, target, shape_json)
    if key not in _TIMERS:
        from . import build
        from .ops import OPS
        xs = OPS[op].random_inputs(json.loads(shape_json), np.random.default_rng())
        ref = build.reference_timer(op, target, xs)     # None: no torch with CUDA on a GPU server
        _TIMERS[key] = None if ref is None else (ref[0], build._repeater(ref[1], ref[2]))
    return _TIMERS[key]


def reference_name(op: str, target: str, shape_json: str) -> str:
    """The library compared with on this machine ('' when there is none); prepares and warms up its timer."""
    t = _timer(op, target, shape_json)
    return t[0] if t else ""


def reference_ms(op: str, target: str, shape_json: str, repeat: int) -> float:
    """Median ms of `repeat` repeats (each >= 10 ms of back-to-back calls, as build.run times the library)."""
    t = _timer(op, target, shape_json)
    if t is None:
        raise RuntimeError(f"No reference library for {target} on this server.")
    return float(np.median([t[1]() for _ in range(int(repeat))]))


def reference_wake(op: str, target: str, shape_json: str) -> None:
    """One untimed call of the library (its threads woken after a pause, as build.alternate does here)."""
    from . import build
    t = _timer(op, target, shape_json)
    if t is not None:
        build.wake(t[1])


# The session's kernel timer (build.kernel_timer over a module and its arguments on this server): one at a time,
# as a session times one kernel at a time.
_KERNEL: list = []


def kernel_timer(mod, *args) -> str:
    """Prepares and warms up the timing of `mod` (a module the client uploaded and loaded) called on `args` (its
    tensors on this server's device) as a local run times it (build.kernel_timer: CUDA graph replay on a GPU
    with torch, else TVM's time_evaluator); says how."""
    from . import build
    import tvm
    # the tensors a remote call receives are views for that call only: the timer keeps copies of its own
    own = [tvm.runtime.empty(a.shape, a.dtype, a.device) for a in args]
    for o, a in zip(own, args):
        o.copyfrom(a)
    how, once = build.kernel_timer(mod, own[0].device, own)
    _KERNEL[:] = [once, own]
    return how


def kernel_ms() -> float:
    """ms per call of one repeat (>= 10 ms of calls) of the kernel kernel_timer prepared."""
    if not _KERNEL:
        raise RuntimeError("No kernel is prepared on this server: call kernel_lab.kernel_timer first.")
    return float(_KERNEL[0]())


def kernel_wake() -> None:
    """One untimed call of the prepared kernel (its threads woken after a pause)."""
    from . import build
    if _KERNEL:
        build.wake(_KERNEL[0])


def register() -> None:
    """Runs in TVM's server process before its listen loop. Each session then starts as a fresh (spawned)
    Python that registers these functions itself (_session): a session forked from the listener, as TVM does
    by default, found the CUDA driver 'not initialized' on the H200 machine (CUDA_ERROR_NOT_INITIALIZED in
    cuDeviceGetName), which a fresh process never does."""
    import multiprocessing

    from tvm.rpc import server
    multiprocessing.set_start_method("spawn", force=True)
    server._serve_loop = _session           # what the listener starts per connection, looked up at that time
    server._serving = _surviving(server._serving)
    _functions()


def _surviving(tvm_serving):
    """TVM's per-connection serving, except that a session process that died (a kernel that faulted: abort()
    or a CUDA 'misaligned address') does not end the listen loop: TVM raises there, in the listener's thread,
    and the server stopped taking sessions for good. The dead session is logged, its connection closed, and
    the server goes on to the next one."""
    import logging

    def serving(sock, addr, opts, load_library):
        cwd = os.getcwd()
        try:
            tvm_serving(sock, addr, opts, load_library)
        except RuntimeError as e:
            logging.getLogger("RPCServer").warning("session from %s ended: %s; serving on", addr, e)
            os.chdir(cwd)
            sock.close()
    return serving


def _functions() -> None:
    """Importing kernels.build sets TVM_NUM_THREADS (one worker per physical core) before the session starts
    TVM's thread pool, as on a local run."""
    import tvm_ffi
    from . import build  # noqa: F401
    for name, fn in ((DEVICE_INFO, device_info), (REFERENCE_NAME, reference_name), (REFERENCE_MS, reference_ms),
                     (KERNEL_TIMER, kernel_timer), (KERNEL_MS, kernel_ms), (KERNEL_WAKE, kernel_wake),
                     (REFERENCE_WAKE, reference_wake)):
        tvm_ffi.register_global_func(name, fn, override=True)


def _session(sock, load_library, work_path):
    """One RPC session in its own fresh process: Kernel Lab's functions, then TVM's serving loop."""
    _functions()
    from tvm.rpc import server
    server._serve_loop(sock, load_library, work_path)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(text)
    return host, int(port)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m kernels.rpc_server", description=__doc__.splitlines()[0])
    p.add_argument("--tracker", required=True, help="HOST:PORT of the RPC tracker to join")
    p.add_argument("--key", required=True, help="the pool this server joins (e.g. h200, cpu-box)")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on")
    p.add_argument("--port", type=int, default=9090, help="first port to try")
    p.add_argument("--port-end", type=int, help="ports tried: [port, port-end) (default port+100)")
    p.add_argument("--custom-addr", help="address to report to the tracker, when clients reach this machine "
                                          "by another one than it sees")
    a = p.parse_args(argv)
    try:
        tracker = _address(a.tracker)
    except ValueError:
        p.error(f"--tracker wants HOST:PORT (e.g. 127.0.0.1:9190), not '{a.tracker}'")
    from tvm import rpc
    # TVM runs the server in a child Python (tvm.exec.popen_worker) that unpickles `register` by its module
    # name: make this checkout importable there wherever the server was started from.
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    server = rpc.Server(a.host, a.port, a.port_end or a.port + 100, key=a.key, tracker_addr=tracker,
                        custom_addr=a.custom_addr, server_init_callback=register)
    # A plain kill of this process would leave TVM's server child running: take it down too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"Kernel Lab RPC server on {a.host}:{server.port}, key '{a.key}', tracker {a.tracker}", flush=True)
    try:
        server.proc.join()
    finally:
        server.terminate()


if __name__ == "__main__":
    # Import this module under its own name, so that `register` is pickled by reference, not by value.
    from kernels.rpc_server import main as _main
    _main()
