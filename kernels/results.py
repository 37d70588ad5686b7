"""SQLite store of every recorded run; pandas out. Safe for concurrent writers in several processes."""
from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

import pandas as pd

ENV = "KERNEL_LAB_DB"
COLUMNS = ("date", "device", "target", "op", "shape", "knobs", "preset", "median_ms", "spread_ms", "repeats",
           "gflops", "gbps", "rel_err", "ok", "ref", "ref_ms", "vs_ref", "compile_s", "versions", "source", "timer")


def default_path() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-lab" / "results.sqlite"


def _connect(path: Path | None = None) -> sqlite3.Connection:
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=60, isolation_level=None)     # writers wait up to 60 s for the lock
    _wal(con)
    con.execute(f"CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, {', '.join(COLUMNS)})")
    _add_columns(con)
    return con


def _add_columns(con: sqlite3.Connection) -> None:
    """A store written before a column existed (timer) gets it, empty in its old rows; two processes adding it at
    once both succeed."""
    have = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    for c in COLUMNS:
        if c not in have:
            try:
                con.execute(f"ALTER TABLE runs ADD COLUMN {c}")
            except sqlite3.OperationalError as e:
                if "duplicate column" not in str(e):
                    raise


def _wal(con: sqlite3.Connection, seconds: float = 60.0) -> None:
    """WAL mode (readers never block the writer; it stays set in the file). Switching a new file to it needs
    a moment with no other connection, and SQLite does not wait for that moment (the busy timeout does not
    apply), so several processes opening a new store at once retry here instead of failing."""
    end = time.monotonic() + seconds
    while True:
        try:
            if con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() == "wal":
                return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise
        if time.monotonic() > end:
            raise sqlite3.OperationalError(f"could not switch {con} to WAL mode in {seconds:.0f} s")
        time.sleep(0.005 + 0.02 * random.random())


def record(result, preset: str = "", source: str = "local", path: Path | None = None) -> None:
    """Append one Result; BEGIN IMMEDIATE takes the write lock up front so concurrent writers queue."""
    row = result.as_dict() if hasattr(result, "as_dict") else dict(result)
    row = {**row, "shape": json.dumps(row["shape"]), "preset": preset or row.get("preset", ""), "source": source}
    con = _connect(path)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute(f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                    [row.get(c) for c in COLUMNS])
        con.execute("COMMIT")
    finally:
        con.close()


def load(path: Path | None = None) -> pd.DataFrame:
    path = Path(path or default_path())
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    con = _connect(path)
    try:
        df = pd.read_sql_query(f"SELECT {', '.join(COLUMNS)} FROM runs ORDER BY id", con)
    finally:
        con.close()
    df["ok"] = df["ok"].astype(bool)
    return df
