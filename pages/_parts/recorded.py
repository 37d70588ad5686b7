"""Every recorded run as one flat table (the GPU tables shipped in data/ and this machine's results store),
and the pure summaries the pages draw from it: lookups by knobs, speed-ups, roofline fractions, and the
"which level wins" table and sentence. pandas only: no Streamlit, no TVM, so tests feed it any numbers."""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
DATA_ENV = "KERNEL_LAB_DATA"            # tests point this at a folder of edited copies
COLUMNS = ("device", "date", "run", "target", "op", "shape", "name", "median_ms", "spread_ms", "ok", "rel_err",
           "gflops", "gbps", "reference", "ref_ms", "vs_ref", "reference_timing", "knobs", "source", "error")
NO_GRAPH = "plain torch calls, no CUDA graph (host overhead included)"


def data_dir() -> Path:
    return Path(os.environ.get(DATA_ENV) or ROOT / "data")


def shape_text(shape: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def _shape_dict(text: str) -> dict:
    return {k: int(v) for k, v in (p.split("=") for p in text.split(",") if "=" in p)}


def _timing(doc: dict, ref_name: str) -> str:
    """How the reference was timed: the CUDA graph replay of the latest table, or plain calls (pass 1)."""
    if "CUDA graph" in (ref_name or ""):
        return doc.get("reference_timing") or "CUDA graph replay"
    return NO_GRAPH if ref_name else ""


def bench_tables(folder: Path | str | None = None):
    """(path, document) for every benchmark table (bench/h200.py `table` format) under data/."""
    for path in sorted(glob.glob(str(Path(folder or data_dir()) / "**" / "*.json"), recursive=True)):
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
            yield path, doc


def bench_runs(folder: Path | None = None) -> pd.DataFrame:
    """Every run of every benchmark table (bench/h200.py `table` format) under data/: one row per run."""
    rows = []
    for path, doc in bench_tables(folder):
        device, date = doc.get("device", "?"), str(doc.get("date", "?"))
        for row in doc["rows"]:
            ref = row.get("reference") or {}
            timing = _timing(doc, ref.get("name", ""))
            run = f"{device} ({Path(path).name}" + (", references without CUDA graphs)" if timing == NO_GRAPH else ")")
            for name, r in (row.get("runs") or {}).items():
                if not isinstance(r, dict):
                    continue
                ms, ref_ms = r.get("median_ms"), ref.get("median_ms")
                when = str(r.get("started") or row.get("started") or date)   # a re-measured run keeps its own date
                rows.append({"device": device, "date": when, "run": run, "target": "cuda", "op": row.get("op"),
                             "shape": shape_text(row.get("shape", {})), "name": name, "median_ms": ms,
                             "spread_ms": r.get("spread_ms"), "ok": r.get("ok"), "rel_err": r.get("rel_err"),
                             "gflops": r.get("gflops"), "gbps": r.get("gbps"), "reference": ref.get("name"),
                             "ref_ms": ref_ms, "vs_ref": ref_ms / ms if ms and ref_ms else None,
                             "reference_timing": timing, "knobs": r.get("knobs"),
                             "source": os.path.relpath(path, ROOT), "error": r.get("error")})
    return _finish(pd.DataFrame(rows, columns=COLUMNS))


def store_runs(df: pd.DataFrame) -> pd.DataFrame:
    """kernels.results.load() in the same columns (runs recorded on this machine by the app or the CLI)."""
    if df is None or df.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.DataFrame({
        "device": df["device"], "date": df["date"].astype(str),
        "run": df["device"].astype(str) + " (this machine's results store)", "target": df["target"],
        "op": df["op"], "shape": df["shape"].map(lambda s: shape_text(json.loads(s)) if isinstance(s, str) else s),
        "name": df["preset"].fillna("").replace("", "custom knobs"), "median_ms": df["median_ms"],
        "spread_ms": df["spread_ms"], "ok": df["ok"], "rel_err": df["rel_err"], "gflops": df["gflops"],
        "gbps": df["gbps"], "reference": df["ref"], "ref_ms": df["ref_ms"], "vs_ref": df["vs_ref"],
        "reference_timing": "timed in the same process, interleaved with the kernel" +
                            df["timer"].fillna("").map(lambda t: f" (kernel: {t})" if t else ""), "knobs": df["knobs"],
        "source": "results store (" + df["source"].astype(str) + ")", "error": None})
    return _finish(out)


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    """Fill GFLOP/s and GB/s where a run recorded only its time (TVM's default schedule, dlight)."""
    if df.empty:
        return df
    from kernels.ops import OPS
    for i, r in df[df["gflops"].isna() & df["median_ms"].notna()].iterrows():
        if r["op"] in OPS:
            s = _shape_dict(r["shape"])
            df.at[i, "gflops"] = OPS[r["op"]].flops(s) / r["median_ms"] / 1e6
            df.at[i, "gbps"] = OPS[r["op"]].min_bytes(s) / r["median_ms"] / 1e6
    return df


def _same(op: str, target: str, text, knobs) -> bool:
    """Whether a recorded knob text names these knobs. The text is parsed into today's knob class, so a knob
    added since the run was recorded takes its default (the behaviour the run had)."""
    from kernels.knobs import KnobError, parse_knobs
    if not isinstance(text, str) or not text:
        return False
    try:
        return parse_knobs(op, target, text) == knobs
    except (KnobError, TypeError, ValueError):
        return False


def find(df: pd.DataFrame, op: str, shape: dict, knobs, target: str = "cuda") -> pd.DataFrame:
    """Recorded runs of exactly these knobs (a knob dataclass) on this operator and shape, latest first."""
    if df.empty:
        return df
    rows = df[(df["op"] == op) & (df["shape"] == shape_text(shape)) & (df["target"] == target)
              & df["median_ms"].notna()]
    same = {t: _same(op, target, t, knobs) for t in rows["knobs"].dropna().unique()}
    hit = rows[rows["knobs"].map(lambda t: same.get(t, False))]
    return hit.sort_values("date", ascending=False)


def latest(hits: pd.DataFrame) -> pd.Series | None:
    """The most recent recorded run per device, one row (the first device's), or None."""
    return None if hits is None or hits.empty else hits.iloc[0]


def speedups(df: pd.DataFrame, over: str = "baseline") -> pd.DataFrame:
    """Each run's speed-up over the `over` run of the same table row (run, op, shape)."""
    base = df[df["name"] == over].set_index(["run", "op", "shape"])["median_ms"]
    key = list(zip(df["run"], df["op"], df["shape"]))
    b = [base.get(k, np.nan) for k in key]
    return df.assign(**{f"vs_{over}": np.array(b, dtype=float) / df["median_ms"].astype(float)})


def roofline_fraction(df: pd.DataFrame, ceilings: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Measured GFLOP/s over the roof at the operator's minimum-traffic intensity (FLOPs / (inputs read once
    + output written once)), per device from `ceilings` {device: (peak GFLOP/s, bandwidth GB/s)}."""
    from kernels.ops import OPS
    ai, roof = [], []
    for _, r in df.iterrows():
        s = _shape_dict(r["shape"]) if isinstance(r["shape"], str) else {}
        c = ceilings.get(r["device"])
        if r["op"] in OPS and s and c:
            x = OPS[r["op"]].flops(s) / OPS[r["op"]].min_bytes(s)
            ai.append(x)
            roof.append(min(c[0], c[1] * x))
        else:
            ai.append(np.nan)
            roof.append(np.nan)
    out = df.assign(min_intensity=ai, roof_gflops=roof)
    return out.assign(roof_fraction=out["gflops"].astype(float) / out["roof_gflops"])


# ---------------------------------------------------------------- which level wins
# The measured candidates that differ only in where the operands are cached (bench/variants.py).
SCOPE_RUNS = {"seed-local": "local", "seed-shared": "shared", "seed-shared+local": "shared+local"}
SCOPE_WORDS = {"local": "registers (local)", "shared": "shared memory", "shared+local": "shared memory staged "
               "through registers (shared+local)"}
OP_WORDS = {"gemm": "GEMM", "conv1d": "conv1d"}
SEED_SAYS = {"gemm": "local", "conv1d": "local"}   # the seed: local won on its course GPU for both


def level_table(df: pd.DataFrame, ops=("gemm", "conv1d")) -> pd.DataFrame:
    """One row per (device, op, shape): the latest recorded time of each cache scope on that device, the winner,
    and how much faster it was than the best of the other family (registers against shared memory)."""
    runs = df[df["name"].isin(list(SCOPE_RUNS)) & df["op"].isin(ops) & df["median_ms"].notna()
              & (df["ok"] != False)]   # noqa: E712 - NaN ok (unknown) stays
    if runs.empty:
        return pd.DataFrame(columns=["device", "date", "op", "shape", *SCOPE_RUNS.values(), "winner", "loser",
                                     "factor"])
    runs = runs.sort_values("date").drop_duplicates(["device", "op", "shape", "name"], keep="last")
    wide = runs.pivot_table(index=["device", "op", "shape"], columns="name", values="median_ms",
                            aggfunc="first").rename(columns=SCOPE_RUNS).reset_index()
    wide["date"] = [runs[(runs["device"] == d) & (runs["op"] == o) & (runs["shape"] == s)]["date"].max()
                    for d, o, s in zip(wide["device"], wide["op"], wide["shape"])]
    rows = []
    for _, r in wide.iterrows():
        t = {s: float(r[s]) for s in SCOPE_RUNS.values() if s in r and pd.notna(r[s])}
        if "local" not in t or len(t) < 2:
            continue
        win = min(t, key=t.get)
        other = {s: v for s, v in t.items() if (s == "local") != (win == "local")}
        lose = min(other, key=other.get)
        rows.append({**{k: r[k] for k in ("device", "date", "op", "shape")}, **t, "winner": win, "loser": lose,
                     "factor": t[lose] / t[win]})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["_n"] = out["shape"].map(lambda s: sum(_shape_dict(s).values()))
    order = {o: i for i, o in enumerate(ops)}
    return out.sort_values(["device", "op", "_n"], key=lambda c: c.map(order) if c.name == "op" else c) \
              .drop(columns="_n").reset_index(drop=True)


def _where(shape: str) -> str:
    s = _shape_dict(shape)
    vals = set(s.values())
    if len(vals) == 1:
        return f"{'='.join(s)}={vals.pop()}"
    return shape


def _family(scope: str) -> str:
    return "registers" if scope == "local" else "shared memory"


def level_sentence(table: pd.DataFrame) -> str:
    """One sentence per device, generated from the numbers: which cache level won each operator where, by how
    much, and whether that agrees with the seed's finding that local (registers) won both."""
    if table is None or table.empty:
        return "No measurements of the cache-scope variants are recorded yet, so no level can be called the winner."
    out = []
    for device, d in table.groupby("device", sort=False):
        parts, agree, disagree = [], [], []
        for op, g in d.groupby("op", sort=False):
            wins = [(r["winner"], r["loser"], r["factor"], _where(r["shape"]), r) for _, r in g.iterrows()]
            fams = {_family(w) for w, *_ in wins}
            detail = ", ".join(f"{f:.2f}x at {where}" + (f" as {w}" if w == "shared+local" else "")
                               for w, _, f, where, _ in wins)
            name = OP_WORDS.get(op, op)
            if len(fams) == 1:
                fam = fams.pop()
                other = "shared memory" if fam == "registers" else "registers"
                scope = "both sizes" if len(wins) == 2 else ("every size" if len(wins) > 2 else wins[0][3])
                parts.append(f"{fam} beat {other} for {name} at {scope} ({detail})")
            else:
                parts.append(f"{name} was split: " + ", ".join(
                    f"{_family(w)} won at {where} ({f:.2f}x faster than {_family(l)})" for w, l, f, where, _ in wins))
            for w, _, _, where, _ in wins:
                (agree if _family(w) == _family(SEED_SAYS.get(op, "local")) else disagree).append(f"{name} at {where}")
        date = str(d["date"].iloc[0])[:10]
        s = f"On the {device} ({date}), " + "; ".join(parts) + "."
        if not disagree:
            s += " That agrees with the seed, where registers won both."
        elif not agree:
            s += " That is the opposite of the seed, where registers won both."
        else:
            s += f" The seed's finding (registers won both) held for {', '.join(agree)}, not for {', '.join(disagree)}."
        out.append(s[0].upper() + s[1:])
    return " ".join(out)


def provenance(folder: Path | None = None) -> pd.DataFrame:
    """Where each recorded table came from: file, device, date, command, versions, how references were timed."""
    rows = []
    for path, doc in bench_tables(folder):
        refs = {(r.get("reference") or {}).get("name", "") for r in doc["rows"]}
        graph = any("CUDA graph" in r for r in refs)
        rows.append({"file": os.path.relpath(path, ROOT), "device": doc.get("device"), "date": doc.get("date"),
                     "rows": len(doc["rows"]), "command": doc.get("command", ""),
                     "versions": doc.get("versions", ""),
                     "references": doc.get("reference_timing", "CUDA graph replay") if graph else NO_GRAPH,
                     "note": doc.get("note", "")})
    return pd.DataFrame(rows)
