"""The recorded H200 runs behind the Walkthrough's steps past the seed, read from data/ at run time.

Each step names the data file and the run in it that measured exactly its knobs (walk.py); this module reads
that run, checks its recorded knob text against the step's knobs, and says what the file records about it:
its median time, the reference library timed in the same process (or that none was), the command that
measured it. The files come in four shapes (bench.h200 tables, runs of bench.variants time gathered in one file,
single-run variant files, bench.variants rounds); every one becomes the same flat Entry. Pure: json and
kernels.knobs only, no Streamlit, no TVM, so tests feed it edited copies (KERNEL_LAB_DATA)."""
from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass
from functools import lru_cache

from kernels import knobs as K

from .recorded import data_dir

OP, TARGET = "gemm", "cuda"


@dataclass(frozen=True)
class Source:
    """A run in a data file: its name there, and which of the file's runs (its date) where it holds several."""
    file: str
    name: str
    date: str = ""


@dataclass(frozen=True)
class Evidence:
    """Nsight Compute counters of one launch in a data file (the files name kernels by run name, not knobs)."""
    file: str
    who: str
    date: str
    metrics: tuple[tuple[str, str], ...]      # (metric, what it means)


@dataclass(frozen=True)
class Entry:
    """One kernel timed at one shape, as a data file records it."""
    file: str
    run: str                 # the process that timed it: entries with the same run were timed together
    date: str
    command: str
    shape: tuple
    name: str
    knobs: str               # the knob text as recorded
    median_ms: float
    ref: str                 # the reference library's name as recorded
    ref_ms: float | None     # the reference timed in the same process; None where the file has none
    vs_ref: float | None     # ref_ms / median_ms (alternating rounds: the median of the rounds' ratios)
    rounds: int = 0          # alternating rounds behind the medians (0: one timing of repeats)
    ref_note: str = ""       # why there is no same-run reference, or how it was timed
    device: str = ""


def _shape(s: dict) -> tuple:
    return tuple(s.items())


def _table(file: str, doc: dict) -> list[Entry]:
    """bench/h200.py tables: a re-measured row keeps its older runs (bench.h200 merge) but takes the new run's
    reference, so a run shares the row's reference only if it was timed with it (the same `started`)."""
    out = []
    for row in doc["rows"]:
        if row.get("op") != OP or not isinstance(row.get("runs"), dict):
            continue
        ref = row.get("reference") or {}
        for name, r in row["runs"].items():
            if not isinstance(r, dict) or r.get("median_ms") is None or not r.get("knobs"):
                continue
            when = r.get("started") or row.get("started") or doc.get("date", "")
            same = r.get("started") == row.get("started")
            note = "" if same else f"the table keeps its row's reference time from a later run, `{row.get('started')}`"
            if same and "CUDA graph" not in ref.get("name", ""):
                note = doc.get("note", "")
            ms = float(r["median_ms"])
            ref_ms = float(ref["median_ms"]) if same and ref.get("median_ms") else None
            out.append(Entry(file, f"{file}@{when}", when, doc.get("command", ""), _shape(row["shape"]), name,
                             r["knobs"], ms, ref.get("name", ""), ref_ms, ref_ms / ms if ref_ms else None,
                             ref_note=note, device=doc.get("device", "")))
    return out


def _named(file: str, date: str, command: str, shapes: list, device: str) -> list[Entry]:
    """Shapes with a reference and named runs (bench.variants time: h200_kmajor, late_copies, dyn_shared): one process each.
    Runs built outside the knobs (dynamic shared memory, moved copies) are left out: their knob text alone
    does not name the kernel that ran."""
    out = []
    for s in shapes:
        ref = s.get("reference") or {}
        for name, r in (s.get("runs") or {}).items():
            if (not isinstance(r, dict) or r.get("median_ms") is None or not r.get("knobs")
                    or r.get("dynamic_shared") or r.get("copies_at")):
                continue
            ms, ref_ms = float(r["median_ms"]), ref.get("median_ms")
            out.append(Entry(file, f"{file}@{date}", date, command, _shape(s["shape"]), name, r["knobs"], ms,
                             ref.get("name", ""), ref_ms, ref_ms / ms if ref_ms else None, device=device))
    return out


def _rounds(file: str, date: str, command: str, shapes: list, device: str) -> list[Entry]:
    """bench.variants rounds: best, a variant and the reference timed one after the other in each round."""
    out = []
    for s in shapes:
        ref_ms = statistics.median(s["ref_ms"])
        sides = [("best", s.get("knobs"), s["best_ms"], s["ratios"])]
        v = s.get("variant")
        if isinstance(v, dict) and v.get("ms"):
            sides.append((v["name"], v.get("knobs"), v["ms"], v["ratios"]))
        for name, knobs, ms, ratios in sides:
            if knobs:
                out.append(Entry(file, f"{file}@{date}", date, command, _shape(s["shape"]), name, knobs,
                                 statistics.median(ms), s.get("reference", ""), ref_ms, statistics.median(ratios),
                                 rounds=len(ms), device=device))
    return out


def _entries(file: str, doc: dict) -> list[Entry]:
    if isinstance(doc.get("rows"), list):
        return _table(file, doc)
    runs = doc["runs"] if isinstance(doc.get("runs"), list) else [doc]
    out = []
    for run in runs:
        shapes = run.get("shapes") or []
        date, command = run.get("date", doc.get("date", "")), run.get("command", doc.get("command", ""))
        device = run.get("device", doc.get("device", ""))
        timed = [s for s in shapes if "best_ms" in s]
        out += (_rounds(file, date, command, timed, device)
                + _named(file, date, command, [s for s in shapes if s not in timed], device))
    return out


@lru_cache(maxsize=64)
def _load(path: str, mtime: float) -> tuple[Entry, ...]:
    with open(path) as f:
        return tuple(_entries(os.path.basename(path), json.load(f)))


def entries(file: str) -> tuple[Entry, ...]:
    """Every GEMM kernel timed in data/<file> (empty if the file is not there)."""
    path = os.path.join(str(data_dir()), file)
    if not os.path.exists(path):
        return ()
    return _load(path, os.path.getmtime(path))


def same_knobs(text: str, knobs) -> bool:
    """Whether a recorded knob text names these knobs (a knob added since takes its default, as it ran)."""
    try:
        return K.parse_knobs(OP, TARGET, text) == knobs
    except (K.KnobError, TypeError, ValueError):
        return False


def lookup(sources, shape: dict, knobs) -> tuple[Entry | None, str]:
    """The first of `sources` that timed exactly these knobs at this shape, or None and why none did."""
    why = []
    for src in sources:
        hits = [e for e in entries(src.file) if e.name == src.name and e.shape == _shape(shape)
                and (not src.date or e.date == src.date)]
        good = [e for e in hits if same_knobs(e.knobs, knobs)]
        if good:
            return good[0], ""
        why.append(f"`data/{src.file}` records `{src.name}` with other knobs (`{hits[0].knobs}`)" if hits else
                   f"`data/{src.file}` has no run `{src.name}` at this shape")
    return None, "; ".join(why) or "no data file is named for this step"


def in_run(entry: Entry, knobs) -> Entry | None:
    """The kernel with these knobs timed in the same process as `entry`, at its shape, if there is one."""
    for e in entries(entry.file):
        if e.run == entry.run and e.shape == entry.shape and same_knobs(e.knobs, knobs):
            return e
    return None


def counters(ev: Evidence) -> tuple[dict[str, float], str, dict] | None:
    """The named launch's counters (metric -> value), the command recorded with them and the shape they were
    read at, or None if the file does not hold it."""
    path = os.path.join(str(data_dir()), ev.file)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    for k in doc.get("kernels", []):
        if k.get("who") == ev.who and k.get("date") == ev.date:
            got = {m: k[m] for m, _ in ev.metrics if isinstance(k.get(m), (int, float))}
            return (got, k.get("command", ""), k.get("shape") or doc.get("shape") or {}) if got else None
    return None


# ---------------------------------------------------------------- how the page writes the numbers
def ms(v: float) -> str:
    return f"{v:.4g}"


def ratio(v: float) -> str:
    return f"{v:.3g}x"


def factor(v: float) -> str:
    return f"{v:.2f}x"


def count(v: float) -> str:
    return f"{v:,.0f}" if float(v).is_integer() and abs(v) >= 10 else f"{v:g}"
