"""Runs a kernel on a server of an RPC tracker's pool: compiled here for its device, verified and timed there."""
from __future__ import annotations

import collections
import contextlib
import functools
import gc
import json
import os
import socket
import struct
import tempfile
import threading
import time
from dataclasses import dataclass

import tvm
from tvm import rpc
from tvm.rpc import base

from . import build, lowering
from .ops import Shape
from .rpc_server import DEVICE_INFO, KERNEL_MS, KERNEL_TIMER, KERNEL_WAKE, REFERENCE_MS, REFERENCE_NAME, \
    REFERENCE_WAKE

ENV = "KERNEL_LAB_RPC"          # HOST:PORT:KEY, used when --rpc is not given
TRACKER_TIMEOUT_S = 5.0         # to connect to the tracker and hear its answer to a summary


class RemoteError(Exception):
    """One sentence: what went wrong with the tracker, the pool or the server, and what to do about it."""


@dataclass(frozen=True)
class Pool:
    """The servers a tracker holds under one key."""
    host: str
    port: int
    key: str

    @property
    def tracker(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Servers:
    """One key of a tracker: its servers, how many are free now, and requests waiting for one."""
    key: str
    total: int
    free: int
    pending: int


def parse(text: str, name: str = "--rpc") -> Pool:
    """HOST:PORT:KEY (the host may hold colons, e.g. ::1; the key may not: the tracker splits keys at them)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit() or not parts[2]:
        raise RemoteError(f"{name} wants HOST:PORT:KEY of an RPC tracker and a key of its pool "
                          f"(e.g. 127.0.0.1:9190:cpu-box), not '{text}'.")
    return Pool(parts[0], int(parts[1]), parts[2])


def _tracker(host: str, port: int) -> socket.socket:
    """A connection to the tracker. tvm.rpc.connect_tracker retries a closed port for 60 s before it gives up;
    this says at once that nothing answers."""
    try:
        sock = socket.create_connection((host, port), timeout=TRACKER_TIMEOUT_S)
    except OSError:
        raise RemoteError(f"No RPC tracker answers at {host}:{port}; start one there with `python -m "
                          f"tvm.exec.rpc_tracker --host {host} --port {port}`, or point --rpc (or {ENV}) at "
                          "the tracker that runs.") from None
    try:
        sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
        magic = struct.unpack("<i", base.recvall(sock, 4))[0]
    except OSError:
        magic = None
    if magic != base.RPC_TRACKER_MAGIC:
        sock.close()
        raise RemoteError(f"{host}:{port} answers but is not an RPC tracker (a server's port?); point --rpc "
                          f"(or {ENV}) at the tracker's HOST:PORT.")
    return sock


def servers(host: str, port: int) -> list[Servers]:
    """Every key of the tracker's pool with its total, free and pending counts (what
    `python -m tvm.exec.query_rpc_tracker` prints), for the app to show; keys sorted."""
    sock = _tracker(host, port)
    try:
        base.sendjson(sock, [base.TrackerCode.SUMMARY])
        code, summary = base.recvjson(sock)
    except (OSError, ValueError):
        raise RemoteError(f"The RPC tracker at {host}:{port} stopped answering; check that it still runs, "
                          "and ask again.") from None
    finally:
        sock.close()
    return by_key(summary)


def by_key(summary: dict) -> list[Servers]:
    """TrackerSession.summary()'s dict per key, counted as its text_summary() counts them."""
    total = collections.Counter(s["key"].split(":", 1)[1] for s in summary["server_info"])
    queues = summary["queue_info"]
    keys = sorted(set(total) | {k for k, q in queues.items() if q["pending"]})
    return [Servers(k, total.get(k, 0), queues.get(k, {}).get("free", 0), queues.get(k, {}).get("pending", 0))
            for k in keys]


def _session(pool: Pool, wait_s: float, session_s: float) -> tuple[rpc.RPCSession, str]:
    """A session on a free server of the pool, waiting up to wait_s for one (the tracker itself would wait
    forever); the server ends it after session_s."""
    sock = _tracker(pool.host, pool.port)
    try:
        sock.settimeout(wait_s)
        base.sendjson(sock, [base.TrackerCode.REQUEST, pool.key, "", 1])
        _, (url, port, matchkey) = base.recvjson(sock)
    except TimeoutError:
        raise RemoteError(_none_free(pool, wait_s)) from None
    except (OSError, ValueError):
        raise RemoteError(f"The RPC tracker at {pool.tracker} stopped answering while it looked for a server; "
                          "check that it still runs, and run again.") from None
    finally:
        sock.close()
    try:
        return rpc.connect(url, port, matchkey, session_timeout=session_s), f"{url}:{port}"
    except Exception as e:  # noqa: BLE001 - the connection's own error is a traceback's worth of C++
        # The server starts each session as a fresh Python (a few seconds): a session time shorter than that
        # runs out before the session answers, and the server resets the connection.
        if "RPCSessionTimeoutError" in str(e) or (session_s and session_s < SESSION_START_S):
            raise RemoteError(_expired(session_s, pool, f"{url}:{port}")) from None
        raise RemoteError(f"The RPC server the tracker named for key '{pool.key}' ({url}:{port}) did not accept "
                          "a session; check that it still runs (and that this machine reaches that address), "
                          "and run again.") from None


def _none_free(pool: Pool, wait_s: float) -> str:
    keys = {s.key: s for s in servers(pool.host, pool.port)}
    mine = keys.get(pool.key)
    if mine is None or mine.total == 0:
        there = ", ".join(k for k, s in keys.items() if s.total) or "none"
        return (f"The RPC tracker at {pool.tracker} has no server under key '{pool.key}' (keys there: {there}); "
                f"start one with `python -m kernels.rpc_server --tracker {pool.tracker} --key {pool.key}`, "
                "or use a key it has.")
    return (f"All {mine.total} RPC servers under key '{pool.key}' at {pool.tracker} stayed busy for {wait_s:g} s; "
            "run again later, or wait longer with --rpc-wait.")


SESSION_START_S = 15.0


def _expired(session_s: float, pool: Pool, addr: str) -> str:
    return (f"The {session_s:g} s RPC session on the server under key '{pool.key}' ({addr}) expired before the run "
            "finished; give it more with --rpc-timeout, or use fewer --repeat.")


@contextlib.contextmanager
def _faults(pool: Pool, addr: str, sess: rpc.RPCSession, session_s: float):
    """Anything the session raises becomes one sentence: the session ran out of time, the server went away, or
    the server is there but failed at what it was asked."""
    try:
        yield
    except RemoteError:
        raise
    except Exception as e:      # noqa: BLE001 - RPC failures arrive as assorted TVM and OS errors
        text = str(e)
        if "RPCSessionTimeoutError" in text:
            raise RemoteError(_expired(session_s, pool, addr)) from None
        if _answers(sess):
            raise RemoteError(f"The RPC server under key '{pool.key}' ({addr}) failed at the run ("
                              f"{_first_line(text)}); see the server's log.") from None
        raise RemoteError(f"The RPC server under key '{pool.key}' ({addr}) went away during the run; check that it "
                          f"still runs (`python -m tvm.exec.query_rpc_tracker --host {pool.host} --port {pool.port}`), "
                          "restart it if not, and run again.") from None


def _answers(sess: rpc.RPCSession) -> bool:
    """Whether the server still answers on this session (a cheap round trip)."""
    try:
        sess.get_function("tvm.rpc.server.workpath")("")
        return True
    except Exception:       # noqa: BLE001
        return False


def _first_line(text: str) -> str:
    """The message of a TVM error, without the traceback TVM puts before it."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith((" ", "File "))]
    last = lines[-1] if lines else "no message"
    return last if len(last) <= 160 else last[:157] + "..."


def _device(sess: rpc.RPCSession, target: str, key: str) -> tuple[object, str, tvm.target.Target]:
    """The server's device, its name, and the TVM target to compile for it: for a GPU its own compute capability;
    for a CPU the name lowering.cpu_name's rule gives on the server (kernels.rpc_server), or, on a plain TVM
    server, the CPU name the server's LLVM detects."""
    if target == "cuda":
        dev = sess.cuda(0)
        if not dev.exist:
            raise RemoteError(f"The RPC server under key '{key}' has no CUDA GPU; use --target cpu, or a key whose "
                              "servers have one.")
        return dev, dev.device_name, lowering.tvm_target("cuda", arch="sm_" + dev.compute_version.replace(".", ""))
    try:
        info = json.loads(sess.get_function(DEVICE_INFO)())
    except AttributeError:      # a plain tvm.exec.rpc_server
        mcpu = sess.get_function("tvm.codegen.llvm.GetHostCPUName")()
        return sess.cpu(0), f"{mcpu} CPU via rpc {key}", lowering.tvm_target("cpu", mcpu=mcpu)
    return (sess.cpu(0), f"{info['cpu']} via rpc {key}",
            lowering.tvm_target("cpu", mcpu=info["mcpu"], mtriple=f"{info['machine']}-linux-gnu"))


def _reference(sess: rpc.RPCSession, op: str, target: str, shape: Shape):
    """(library name, () -> ms of one repeat timed on the server, note); name and callable None where the
    server cannot time it: the ratio is then left out, never taken against this machine's library."""
    try:
        name_of, ms_of = sess.get_function(REFERENCE_NAME), sess.get_function(REFERENCE_MS)
    except AttributeError:
        return None, None, ("The server is a plain tvm.exec.rpc_server, so the reference library was not timed "
                            "there and ref, ref_ms and vs_ref are empty; start it with python -m kernels.rpc_server "
                            "for a same-machine ratio.")
    args = (op, target, json.dumps(dict(shape)))
    name = name_of(*args)           # builds and warms up the server's timer
    if not name:
        return None, None, (f"The server has no reference library for {target} (torch with CUDA), so ref, ref_ms "
                            "and vs_ref are empty.")
    return name, _woken(sess, lambda: ms_of(*args, 1), REFERENCE_WAKE, *args), ""


def _woken(sess: rpc.RPCSession, once, wake_name: str, *args):
    """`once` with the server's untimed call as its `wake` (build.alternate makes it after each pause), where the
    server has it (kernels.rpc_server of this version)."""
    try:
        wake = sess.get_function(wake_name)
    except AttributeError:
        return once
    once.wake = lambda: wake(*args)
    return once


def run(op: str, shape: Shape, knobs, target: str, pool: Pool | str, repeat: int = 5, wait_s: float = 60.0,
        session_s: float = 600.0) -> build.Result:
    """build.run on a server of the pool (a Pool or its HOST:PORT:KEY): compile here for its device; verify there
    against the float64 reference (inputs made here, the output copied back); time the kernel with the server's
    own timer (_kernel_timer), alternating with the reference library timed on the server; medians of repeats after
    warm-up."""
    pool = parse(pool) if isinstance(pool, str) else pool
    if target not in ("cpu", "cuda"):
        raise RemoteError(f"--rpc runs cpu and cuda kernels; the {target} target is simulated here, so leave "
                          "--rpc out.")
    sess, addr = _session(pool, wait_s, session_s)
    with _faults(pool, addr, sess, session_s):
        dev, device, tgt = _device(sess, target, pool.key)
    with tempfile.TemporaryDirectory() as d:         # compiled and linked here: the server needs no compiler
        t0 = time.perf_counter()
        ex = build.executable(op, shape, knobs, target, device=tgt)
        compile_s = time.perf_counter() - t0
        ex.export_library(os.path.join(d, "kernel.so"))
        with _faults(pool, addr, sess, session_s):
            sess.upload(os.path.join(d, "kernel.so"))
            mod = sess.load_module("kernel.so")
    with _faults(pool, addr, sess, session_s):
        rel, args, _ = build.call_verified(op, shape, mod, dev, target)
        ref, reference, note = _reference(sess, op, target, shape)
        how, once = _kernel_timer(sess, mod, dev, args)
        times, ref_times = build.alternate(once, reference, repeat, settle=target == "cpu")
    return build.result(op, shape, knobs, target, device, rel, times, ref, ref_times, repeat, compile_s, note,
                        timer=how)


def _kernel_timer(sess: rpc.RPCSession, mod, dev, args) -> tuple[str, object]:
    """(how, () -> ms of one repeat) for the loaded module on the server: timed there as a local run times it
    (kernels.rpc_server.kernel_timer: CUDA graph replay on a GPU with torch, as the server's reference library
    is), or, on a plain tvm.exec.rpc_server, by its time_evaluator."""
    try:
        prepare, ms_of = sess.get_function(KERNEL_TIMER), sess.get_function(KERNEL_MS)
    except AttributeError:
        return "TVM time_evaluator on a plain RPC server", build._evaluator(mod, dev, args)
    return f"{prepare(mod, *args)} on the server", _woken(sess, lambda: ms_of(), KERNEL_WAKE)


def device_name(pool: Pool | str, target: str, wait_s: float = 60.0) -> str:
    """The name of the device a server of the pool runs kernels on."""
    pool = parse(pool) if isinstance(pool, str) else pool
    sess, addr = _session(pool, wait_s, 60.0)
    with _faults(pool, addr, sess, 60.0):
        return _device(sess, target, pool.key)[1]


def measure_pool(op: str, shape: Shape, target: str, pool: Pool | str, repeat: int = 3, wait_s: float = 60.0,
                 session_s: float = 600.0):
    """measure() for the tuner (kernels.tune.search) over every free server under the pool's key: one session per
    server, in parallel, each verifying and timing one candidate at a time as a local search does
    (kernels.isolated.judge, each candidate timed by the server's own timer as the winner's final run is:
    _kernel_timer); compiled here. `measure.used` names the servers that measured."""
    from . import isolated, tune
    pool = parse(pool) if isinstance(pool, str) else pool
    width = max(1, next((s.free for s in servers(pool.host, pool.port) if s.key == pool.key), 1))
    lock = threading.Lock()

    def measure(ks):
        queue, got = list(ks), {}

        def connect():
            sess, addr = _session(pool, wait_s, session_s)
            with _faults(pool, addr, sess, session_s):
                dev, _, tgt = _device(sess, target, pool.key)
            return sess, addr, dev, tgt

        def worker():
            sess, addr, dev, tgt = connect()
            while True:
                with lock:
                    if not queue:
                        return
                    k = queue.pop(0)
                    measure.used.add(addr)
                    name = f"k{len(got)}_{threading.get_ident()}.so"  # a library loaded once may not be replaced
                fault = tune.preflight(op, shape, k, target)     # a faulting kernel would end the session
                if fault:
                    got[k] = (None, None, fault)
                    continue
                try:
                    with tempfile.TemporaryDirectory() as d, _faults(pool, addr, sess, session_s):
                        build.executable(op, shape, k, target, device=tgt).export_library(os.path.join(d, name))
                        sess.upload(os.path.join(d, name))
                        mod = sess.load_module(name)
                        got[k] = isolated.judge(op, shape, target, mod, dev, None, measure.fastest, repeat,
                                                tune.SLOW, timer=functools.partial(_kernel_timer, sess))
                    if got[k][0] is not None and got[k][2] == "":
                        with lock:
                            measure.fastest = min(measure.fastest or got[k][0], got[k][0])
                except RemoteError as e:
                    got[k] = (None, None, str(e))
                    if not _answers(sess):      # the candidate took the server's session down: a fresh one
                        try:
                            sess, addr, dev, tgt = connect()
                        except RemoteError:
                            return                  # the other workers measure what is left
                except Exception as e:      # noqa: BLE001 - a candidate that does not build is a failed trial
                    got[k] = (None, None, f"it did not build: {_first_line(str(e))}")
        threads = [threading.Thread(target=worker) for _ in range(min(width, len(ks)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # a session caught in a reference cycle (an error's traceback holds the frame that holds it) stays open,
        # and its server busy, until the collector runs: run it, so each server takes the next batch's session
        gc.collect()
        return [got.get(k, (None, None, "no server measured it")) for k in ks]
    measure.used = set()
    measure.fastest = None          # the fastest verified so far: one far behind it is timed once (tune.SLOW)
    return measure
