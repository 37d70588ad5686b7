"""SQLite store of every recorded run; pandas out. Safe for concurrent writers in several processes."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pandas as pd

ENV = "KERNEL_LAB_DB"
COLUMNS = ("date", "device", "target", "op", "shape", "knobs", "preset", "median_ms", "spread_ms", "repeats",
           "gflops", "gbps", "rel_err", "ok", "ref", "ref_ms", "vs_ref", "compile_s", "versions", "source")


def default_path() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "kernel-lab" / "results.sqlite"


def _connect(path: Path | None = None) -> sqlite3.Connection:
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")          # readers never block the writers
    con.execute("PRAGMA busy_timeout=60000")
    con.execute(f"CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, {', '.join(COLUMNS)})")
    return con


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
