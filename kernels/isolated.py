"""The tuner's candidates verified and timed in a child process: a kernel that faults on the GPU ('misaligned
address', an illegal access) leaves the CUDA context unusable and ends the process that ran it, so it must not
be the tuning process. The H200 anchors run of GEMM 1024^3 (2026-12-05, data/h200_anchors.json step 1) died that
way 17 s in, on a candidate of the first batch that the SASS preflight had passed.

The parent compiles and links each candidate into a shared library (in threads, as before); the child loads it,
checks it against float64 on inputs it drew once for the search, and times it. When the child dies, the trial
fails with what it wrote on stderr and the next candidate gets a fresh child."""
from __future__ import annotations

import contextlib
import functools
import multiprocessing as mp
import os
import sys
import tempfile
import types

import numpy as np

TIMEOUT_S = 30.0            # one candidate's check and timing; a kernel that hangs is stopped after this (a held-out
                            # GEMM step on the H100 stopped in its seventh shape at 120 s a candidate, 2026-12-06)
START_S = 600.0             # the child's start: TVM's import, the search's inputs and their float64 reference


def judge(op: str, shape: dict, target: str, mod, dev, checked, fastest: float | None, repeat: int, slow: float,
          timer=None):
    """(median ms | None, rel. error | None, error sentence) of one loaded candidate: verified against the float64
    reference first, then timed `repeat` times, or once when that first timing is over `slow` times `fastest`.
    `timer` (mod, dev, args) -> (how, one repeat): build.kernel_timer unless given (a server's, kernels.remote)."""
    from . import build
    rel, args, _ = build.call_verified(op, shape, mod, dev, target, checked=checked)
    if rel >= build.TOLERANCE:
        return None, rel, f"wrong result (rel. error {rel:.1e})"
    # calls back to back for at least 10 ms (one call of a slow kernel), as the full timing does: the first call
    # after a pause wakes the thread pool's workers, which can cost a scheduler tick (4 ms)
    # the check just called it on these arguments (its warm-up); no BLAS threads ran here (one_blas_thread)
    once = (timer or functools.partial(build.kernel_timer, settle=False, warmed=True))(mod, dev, args)[1]
    first = once()
    if fastest and first > slow * fastest:
        return first, rel, ""           # far behind the fastest: its one timed repeat says enough
    return float(np.median([first] + [once() for _ in range(repeat - 1)])), rel, ""


def _serve(conn, op: str, shape: dict, target: str, repeat: int, slow: float, err_path: str) -> None:
    """The child: load, verify and time each library it is sent until the pipe closes."""
    fd = os.open(err_path, os.O_WRONLY | os.O_APPEND)       # what the runtime prints as it dies, for the parent
    os.dup2(fd, 2)
    import tvm
    from . import build
    try:            # inputs drawn for this search, one float64 reference for all, before any candidate's clock
        dev, checked = build._tvm_dev(target), build.fresh_check(op, shape, target)
        if target == "cuda":
            build._torch()              # imported now, not in the first candidate's TIMEOUT_S (kernel_timer's graphs)
    except Exception as e:              # noqa: BLE001 - said once, as every candidate's failed trial
        text = str(e).strip().splitlines()
        conn.send(f"the search's inputs could not be prepared: {text[-1][:200] if text else type(e).__name__}")
        return
    conn.send("ready")
    while True:
        try:
            path, fastest = conn.recv()
        except EOFError:
            return
        try:
            mod = tvm.runtime.load_module(path)
            conn.send(judge(op, shape, target, mod, dev, checked, fastest, repeat, slow))
        except Exception as e:          # noqa: BLE001 - a recoverable error is this candidate's failed trial
            text = str(e).strip().splitlines()
            conn.send((None, None, f"it failed on the device: {text[-1][:200] if text else type(e).__name__}"))


@contextlib.contextmanager
def plain_main():
    """While spawning: a spawned child first imports the parent's __main__, and in the Lab (or in a process where
    a test ran the Lab's script) that is the Streamlit script, which then runs in the child and fails (exit code
    1 before the first candidate, seen in the test suite). The child needs nothing from __main__."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


# What the child imports: once, in a fork server, not in each child.
PRELOAD = ["kernels.isolated", "kernels.build"]


def context(target: str = "cpu"):
    """For the CPU: children forked from a fork server that has imported PRELOAD, so that a search, or a suite's
    search per shape, does not pay TVM's import per child (1.2 s here). For a GPU, spawned children: on the H100
    (2026-12-07, data/h100_gemm_width2.json step 2 and the two plans run after it) every candidate of every shape
    failed in children from a fork server, where spawned ones had measured all earlier batches. The likely cause
    (the failure's words were not recorded): importing TVM imports tvm_ffi, which with torch installed calls
    torch.cuda.is_available() at import (tvm_ffi/_optional_torch_c_dlpack.py), and that initialises the CUDA
    driver in the fork server; a process forked from one whose driver is initialised cannot use CUDA. torch's
    PYTORCH_NVML_BASED_CUDA_CHECK=1 (is_available through NVML) would leave it uninitialised: untried on a GPU."""
    if target != "cpu" or "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


class Worker:
    """One child process at a time, started when needed and again after one dies."""

    def __init__(self, op: str, shape: dict, target: str, repeat: int, slow: float, timeout_s: float = TIMEOUT_S):
        self.args = (op, dict(shape), target, repeat, slow)
        self.timeout_s, self.proc, self.conn = timeout_s, None, None
        fd, self.err_path = tempfile.mkstemp(prefix="kernels-worker-", suffix=".log")
        os.close(fd)
        self.crashes, self.ready = 0, False

    def _start(self) -> None:
        ctx = context(self.args[2])
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, *self.args, self.err_path), daemon=True)
        with plain_main():
            self.proc.start()
        child.close()

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(5)
        if self.conn is not None:
            self.conn.close()
        self.proc = self.conn = None

    def begin(self) -> None:
        """Start a child unless one runs: its imports, its device and the search's inputs then come about while
        the caller goes on (the search compiles its first candidates meanwhile); measure() waits for it."""
        if self.proc is None:
            self._start()
            self.ready = False

    def measure(self, path: str, fastest: float | None):
        """(median ms | None, rel. error | None, error sentence) of the library at `path`."""
        if self.proc is not None and self.ready and not self.proc.is_alive():
            self._stop()                # it died after its start: a fresh one (a start that failed says so below)
        self.begin()
        if not self.ready:
            try:        # the start has its own allowance: a large shape's float64 reference takes a while
                said = self.conn.recv() if self.conn.poll(START_S) else f"it did not start within {START_S:g} s"
            except (EOFError, OSError):
                said = "it died while starting"
            if said != "ready":
                self._stop()
                return None, None, f"the process that measures candidates failed: {said}"
            self.ready = True
        size = os.path.getsize(self.err_path)
        try:
            self.conn.send((path, fastest))
            answered = self.conn.poll(self.timeout_s)
            if answered:
                return self.conn.recv()
        except (EOFError, OSError):     # the child died: EOF, or a reset connection
            answered = True
        if not answered:
            self._stop()
            return None, None, (f"it ran past {self.timeout_s:g} s on the device (the check and the timing of one "
                                "candidate), so it was stopped")
        self.proc.join(5)
        code = self.proc.exitcode
        self._stop()
        self.crashes += 1
        with open(self.err_path, errors="replace") as f:
            f.seek(size)
            said = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
        what = said[-1][:200] if said else f"exit code {code}"
        return None, None, f"it crashed the process that ran it on the device ({what})"

    def close(self) -> None:
        self._stop()
        try:
            os.unlink(self.err_path)
        except OSError:
            pass
