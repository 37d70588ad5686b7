"""`run --rpc`: a tracker and two kernels.rpc_server processes on loopback give the local run's verified result with
the reference timed on the server; a tracker that is down, a key without a free server, a server that dies and a
session that expires each end in one 'error:' line, status 2, and no row in the results store."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import cloudpickle  # noqa: F401 - the RPC extras are pinned requirements: missing, these tests fail, never skip
import psutil
import pytest
import tornado  # noqa: F401

from kernels import build, remote, results

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
KEY = "cpu"
GEMM = ["--op", "gemm", "--shape", "M=32,N=32,K=32", "--preset", "best", "--repeat", "2"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start(args: list[str], log: Path) -> subprocess.Popen:
    port = free_port()
    return subprocess.Popen([sys.executable, "-m", *args, "--host", HOST, "--port", str(port), "--port-end",
                             str(port + 1)], cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)


def stop(p: subprocess.Popen) -> None:
    """The process and every child TVM started under it (its server worker and session processes)."""
    try:
        procs = psutil.Process(p.pid).children(recursive=True) + [psutil.Process(p.pid)]
    except psutil.NoSuchProcess:
        return
    for q in procs:
        try:
            q.kill()
        except psutil.NoSuchProcess:
            pass
    p.wait(10)


def wait_for(port: int, key: str | None, total: int, logs: list[Path], seconds: float = 60) -> None:
    """Until the tracker holds `total` free servers under `key` (key None: until the tracker answers)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            pool = remote.servers(HOST, port)
            if key is None or any(s.key == key and s.total == s.free == total for s in pool):
                return
        except remote.RemoteError:
            pass
        time.sleep(0.2)
    pytest.fail(f"no {total} free servers under '{key}' after {seconds} s: " +
                " | ".join(p.read_text()[-500:] for p in logs))


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    """(tracker port, log folder): a tracker and two Kernel Lab servers under KEY."""
    d = tmp_path_factory.mktemp("rpc")
    port = free_port()
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", HOST, "--port", str(port),
                               "--port-end", str(port + 1)], cwd=ROOT, stdout=(d / "tracker.log").open("w"),
                              stderr=subprocess.STDOUT)]
    try:
        wait_for(port, None, 0, [d / "tracker.log"])     # a server that finds no tracker retries only after 5 s
        for i in range(2):
            procs.append(start(["kernels.rpc_server", "--tracker", f"{HOST}:{port}", "--key", KEY], d / f"s{i}.log"))
        wait_for(port, KEY, 2, sorted(d.glob("*.log")))
        yield port, d
    finally:
        for p in procs:
            stop(p)


def cli(*args: str, db: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != remote.ENV}
    return subprocess.run([sys.executable, "-m", "kernels", "run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**base, results.ENV: str(db), **(env or {})})


def one_error_line(p: subprocess.CompletedProcess, db: Path, *words: str) -> None:
    assert p.returncode == 2, p.stderr
    assert p.stdout == "" and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert "Traceback" not in p.stderr and all(w in p.stderr for w in words), p.stderr
    assert len(results.load(db)) == 0           # nothing half-written


def test_run_rpc_gemm_is_the_local_result_with_the_reference_timed_remotely(tracker, tmp_path):
    port, _ = tracker
    db = tmp_path / "runs.sqlite"
    here = json.loads(cli(*GEMM, "--json", db=db).stdout)
    p = cli(*GEMM, "--json", "--record", "--rpc", f"{HOST}:{port}:{KEY}", db=db)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    for k in ("op", "shape", "target", "knobs", "preset"):
        assert r[k] == here[k], k
    assert r["ok"] is True and r["rel_err"] < 1e-4 and r["device"].endswith(f"via rpc {KEY}")
    assert r["ref"] == here["ref"] and r["ref_ms"] > 0 and r["vs_ref"] == pytest.approx(r["ref_ms"] / r["median_ms"])
    # the kernel timed on the server as a local run times it (its module and tensors passed back to it)
    assert here["timer"] == build.CPU_TIMER and r["timer"] == f"{build.CPU_TIMER} on the server"
    rows = results.load(db)
    assert len(rows) == 1 and rows.iloc[0]["source"] == f"rpc:{KEY}" and rows.iloc[0]["device"] == r["device"]


def test_run_conv1d_through_the_environment_variable(tracker, tmp_path):
    port, _ = tracker
    p = cli("--op", "conv1d", "--shape", "M=100,N=7", "--preset", "best", "--repeat", "2", "--json",
            db=tmp_path / "runs.sqlite", env={remote.ENV: f"{HOST}:{port}:{KEY}"})
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["op"] == "conv1d" and r["shape"] == {"M": 100, "N": 7} and "vector=" in r["knobs"]
    assert r["ok"] is True and r["rel_err"] < 1e-4 and f"via rpc {KEY}" in r["device"] and r["ref_ms"] > 0


def test_a_tune_over_the_pool_measures_on_both_servers(tracker, tmp_path, monkeypatch):
    """...and every candidate is timed by the server's own timer (kernels.rpc_server.kernel_timer), as the winner's
    final run is, not by TVM's time_evaluator."""
    from kernels import build, tune
    monkeypatch.setenv(results.ENV, str(tmp_path / "r.sqlite"))
    port, _ = tracker
    hows, real = [], remote._kernel_timer

    def recorded(sess, mod, dev, args):
        how, once = real(sess, mod, dev, args)
        once.wake()                 # the server's untimed call (build.alternate makes it after each pause)
        hows.append(how)
        return how, once
    monkeypatch.setattr(remote, "_kernel_timer", recorded)
    r = tune.tune("gemm", {"M": 48, "N": 40, "K": 32}, "cpu", trials=8, rpc=f"{HOST}:{port}:{KEY}", seed=2)
    assert len(r.servers) == 2 and r.trials == 8 and "via rpc" in r.device
    assert r.best_knobs in {t.knobs for t in r.history if t.ok} and r.ref_ms     # the winner timed remotely too
    assert (results.load()["source"] == "tune").sum() == 8
    verified = sum(t.ok for t in r.history)
    assert len(hows) >= verified > 0 and set(hows) == {f"{build.CPU_TIMER} on the server"}, hows
    assert r.timer == f"{build.CPU_TIMER} on the server"


def test_a_candidate_that_kills_its_session_is_a_failed_trial_and_the_rest_are_measured(tracker, tmp_path,
                                                                                       monkeypatch):
    """A kernel that faults ends the server's session process; the worker opens a fresh session for the next, and
    the server takes sessions again (kernels.rpc_server keeps its listen loop when a session dies)."""
    from kernels import build
    from kernels.knobs import preset
    from tests.kernels.test_tune import _aborting_library
    port, d = tracker
    s = {"M": 48, "N": 40, "K": 32}
    good = [preset("gemm", "cpu", n, s) for n in ("best", "seed", "naive")]
    crash = preset("gemm", "cpu", "baseline", s)
    real = build.executable

    class Aborting:
        def export_library(self, path):
            _aborting_library(path, s)
    monkeypatch.setattr(build, "executable", lambda op, shape, k, target, device=None:
                        Aborting() if k == crash else real(op, shape, k, target, device=device))
    got = remote.measure_pool("gemm", s, "cpu", f"{HOST}:{port}:{KEY}")([crash, *good])
    assert got[0][0] is None and "went away" in got[0][2]
    assert all(ms and rel < build.TOLERANCE and err == "" for ms, rel, err in got[1:]), got
    wait_for(port, KEY, 2, sorted(d.glob("*.log")))     # both servers take sessions again (TVM's listener died)


def test_servers_lists_free_and_total_per_key(tracker):
    port, d = tracker
    wait_for(port, KEY, 2, sorted(d.glob("*.log")))
    assert remote.Servers(KEY, total=2, free=2, pending=0) in remote.servers(HOST, port)


def test_plain_tvm_server_runs_without_a_reference_ratio(tracker, tmp_path):
    port, d = tracker
    plain = start(["tvm.exec.rpc_server", "--tracker", f"{HOST}:{port}", "--key", "plain"], d / "plain.log")
    try:
        wait_for(port, "plain", 1, [d / "plain.log"])
        p = cli(*GEMM, "--json", "--rpc", f"{HOST}:{port}:plain", db=tmp_path / "runs.sqlite")
    finally:
        stop(plain)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["ok"] is True and r["ref"] is None and r["ref_ms"] is None and r["vs_ref"] is None
    assert "kernels.rpc_server" in r["note"] and r["timer"] == "TVM time_evaluator on a plain RPC server"


def test_run_fails_when_the_tracker_is_down(tmp_path):
    db = tmp_path / "runs.sqlite"
    p = cli(*GEMM, "--record", "--rpc", f"{HOST}:{free_port()}:{KEY}", db=db)
    one_error_line(p, db, "No RPC tracker answers", "tvm.exec.rpc_tracker")


def test_run_fails_when_no_server_has_the_key(tracker, tmp_path):
    port, _ = tracker
    db = tmp_path / "runs.sqlite"
    p = cli(*GEMM, "--record", "--rpc", f"{HOST}:{port}:no-such-key", "--rpc-wait", "1", db=db)
    one_error_line(p, db, "no server under key 'no-such-key'", "--key no-such-key", KEY)


def test_run_fails_when_the_session_expires(tracker, tmp_path):
    port, _ = tracker
    db = tmp_path / "runs.sqlite"       # 50 repeats take over 20 s (0.4 s of settling each): 1 s cannot hold them
    p = cli(*GEMM, "--repeat", "50", "--record", "--rpc", f"{HOST}:{port}:{KEY}", "--rpc-timeout", "1", db=db)
    one_error_line(p, db, "session", "expired", "--rpc-timeout")


def test_run_fails_when_the_server_dies_mid_run(tracker, tmp_path):
    port, d = tracker
    db = tmp_path / "runs.sqlite"
    doomed = start(["kernels.rpc_server", "--tracker", f"{HOST}:{port}", "--key", "doomed"], d / "doomed.log")
    try:
        wait_for(port, "doomed", 1, [d / "doomed.log"])
        run = subprocess.Popen([sys.executable, "-m", "kernels", "run", *GEMM, "--repeat", "200", "--record", "--rpc",
                                f"{HOST}:{port}:doomed"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, results.ENV: str(db)})
        end = time.monotonic() + 60            # the server took the session: it starts a fresh Python for it
        while "start serving" not in (d / "doomed.log").read_text() and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(8)                           # that Python is serving (200 repeats then take over a minute)
    finally:
        stop(doomed)
    out, err = run.communicate(timeout=120)
    one_error_line(subprocess.CompletedProcess(run.args, run.returncode, out, err), db, "'doomed'", "went away")


def test_the_lab_lists_the_pool_and_runs_on_one_of_its_servers(tracker, tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tests" / "pages"))
    from pages_app import open_page
    port, _ = tracker
    lab = open_page(None, tmp_path, monkeypatch)
    lab.toggle(key="lab_remote").set_value(True)
    lab.text_input(key="lab_tracker").input(f"{HOST}:{port}")
    lab.text_input(key="lab_rpc_key").input(KEY).run()
    assert not lab.exception, [e.value for e in lab.exception]
    pool = next(d.value for d in lab.dataframe if "free" in d.value.columns)
    assert pool[pool.key == KEY].total.iloc[0] >= 1
    lab.button(key="lab_run_remote").click().run()
    metrics = {m.label: m.value for m in lab.metric}
    assert metrics["Verified"] == "ok" and metrics["vs numpy matmul (OpenBLAS)"].endswith("x")
    assert any("via rpc" in c.value for c in lab.caption)


def test_the_lab_says_when_the_tracker_is_down(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tests" / "pages"))
    from pages_app import open_page
    lab = open_page(None, tmp_path, monkeypatch)
    lab.toggle(key="lab_remote").set_value(True)
    lab.text_input(key="lab_tracker").input(f"{HOST}:{free_port()}").run()
    assert not lab.exception and any("tracker" in e.value.lower() for e in lab.error)
