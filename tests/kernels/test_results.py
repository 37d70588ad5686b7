"""The SQLite results store: rows come back as written, and concurrent writers lose nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kernels import results

ROOT = Path(__file__).resolve().parents[2]


def row(i: int = 0, writer: int = 0) -> dict:
    return {"date": "2026-01-01T00:00:00+00:00", "device": "test CPU", "target": "cpu", "op": "gemm",
            "shape": {"M": 8, "N": 8, "K": i + 1}, "knobs": f"writer={writer}", "median_ms": 0.5 + i,
            "spread_ms": 0.01, "repeats": 5, "gflops": 1.0, "gbps": 2.0, "rel_err": 1e-7, "ok": True,
            "ref": "numpy", "ref_ms": 0.25, "vs_ref": 0.5, "compile_s": 0.1, "versions": "tvm test"}


def test_record_load_round_trip(tmp_path):
    db = tmp_path / "r.sqlite"
    results.record(row(3), preset="best", source="test", path=db)
    df = results.load(db)
    assert len(df) == 1
    got = df.iloc[0]
    want = row(3)
    for col in ("date", "device", "target", "op", "knobs", "median_ms", "gflops", "ref", "vs_ref", "versions"):
        assert got[col] == want[col], col
    assert json.loads(got["shape"]) == want["shape"]
    assert bool(got["ok"]) and got["preset"] == "best" and got["source"] == "test"


def test_a_store_written_before_the_timer_column_gains_it_and_keeps_its_rows(tmp_path):
    import sqlite3
    db = tmp_path / "old.sqlite"
    old = [c for c in results.COLUMNS if c != "timer"]
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE runs (id INTEGER PRIMARY KEY, {', '.join(old)})")
    con.execute(f"INSERT INTO runs ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})",
                [(lambda v: json.dumps(v) if isinstance(v, dict) else v)((row(1) | {"preset": "", "source": "x"})[c])
                 for c in old])
    con.commit()
    con.close()
    results.record(row(2) | {"timer": "CUDA graph replay"}, source="test", path=db)
    df = results.load(db)
    assert len(df) == 2 and df["median_ms"].tolist() == [1.5, 2.5]
    assert df["timer"].isna().iloc[0] and df["timer"].iloc[1] == "CUDA graph replay"


def test_load_of_missing_store_is_empty(tmp_path):
    df = results.load(tmp_path / "none.sqlite")
    assert df.empty and list(df.columns) == list(results.COLUMNS)


def test_env_var_chooses_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv(results.ENV, str(tmp_path / "env.sqlite"))
    results.record(row(), preset="seed")
    assert (tmp_path / "env.sqlite").exists() and len(results.load()) == 1


# Each writer loads results.py on its own (no TVM import: the four start in a fraction of a second).
WRITER = """
import importlib.util, json, sys, time
from pathlib import Path
spec = importlib.util.spec_from_file_location("results", {path!r})
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)
writer, gate, template = int(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
(gate / f"ready{{writer}}").touch()
while not (gate / "go").exists():           # all four start writing together
    time.sleep(0.001)
for i in range(25):
    results.record({{**template, "knobs": f"writer={{writer}}", "median_ms": 0.5 + i}}, preset="best",
                   source=f"proc{{writer}}")
"""


def test_concurrent_writers_lose_no_row(tmp_path):
    db = tmp_path / "c.sqlite"
    env = {**os.environ, results.ENV: str(db)}
    code = WRITER.format(path=str(ROOT / "kernels" / "results.py"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w), str(tmp_path), json.dumps(row())], env=env,
                              stderr=subprocess.PIPE, text=True) for w in range(4)]
    deadline = time.time() + 120
    while len(list(tmp_path.glob("ready*"))) < 4 and time.time() < deadline and all(p.poll() is None for p in procs):
        time.sleep(0.01)
    (tmp_path / "go").touch()
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    df = results.load(db)
    assert len(df) == 100
    assert sorted(df.groupby("source").size().tolist()) == [25, 25, 25, 25]
    assert len(set(zip(df["knobs"], df["median_ms"]))) == 100
