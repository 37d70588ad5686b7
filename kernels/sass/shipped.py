"""Machine counts shipped with the project for the views a visitor opens first.

The emulator's count of one of them can take minutes (the Walkthrough's step 1 at 1024^3: one thread a block,
each looping 64 x 64 x 1024 times, 167 s on two cores), and while it runs the page waits and the one background
worker is busy. `data/machine/counts.json` holds those counts as the emulator computed them, each with the SASS
hash of the cubin it read and a hash of the emulator's source. One is used only where both still match: the
cubin compiled here now, and the emulator as it is now; anything else is counted afresh. `python -m
bench.machine_counts` writes the file again; tests check that every entry is current and that emulating gives
the same counts."""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, fields
from pathlib import Path

from ..records import rows_json

PATH = Path(__file__).resolve().parents[2] / "data" / "machine" / "counts.json"
_SOURCES = ("__init__.py", "_ops.py", "emulator.py", "launch.py", "parse.py", "values.py")


@functools.lru_cache(maxsize=1)
def emulator_hash() -> str:
    """A hash of the emulator's source: an entry counted by another emulator is not used."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def key(op: str, shape: dict, knobs) -> str:
    from ..knobs import knobs_text
    return json.dumps([op, dict(shape), knobs_text(knobs)])


def to_json(m) -> dict:
    return asdict(m)


def from_json(d: dict):
    """MachineCounts from its JSON form (program counters back to ints)."""
    from . import MachineCounts
    d = dict(d)
    for f in ("per_pc", "per_pc_sectors", "pc_tensor"):
        d[f] = {k: {int(pc): v for pc, v in per.items()} for k, per in d[f].items()}
    d["kernels"] = tuple(d.get("kernels", ()))
    return MachineCounts(**{f.name: d[f.name] for f in fields(MachineCounts) if f.name in d})


@functools.lru_cache(maxsize=1)
def entries() -> dict:
    try:
        return json.loads(PATH.read_text()).get("entries", {})
    except (OSError, ValueError):
        return {}


def lookup(op: str, shape: dict, knobs, sass_hash: str):
    """The shipped counts of this schedule, or None where there are none or they no longer hold."""
    e = entries().get(key(op, shape, knobs))
    if not e or e["sass_hash"] != sass_hash or e["emulator"] != emulator_hash():
        return None
    return from_json(e["counts"])


def write(views, progress=print) -> dict:
    """Count every (op, shape, knobs) with the emulator as it is now and write the file."""
    import datetime as dt
    from . import _machine_counts
    out = {}
    for op, shape, knobs in views:
        m = _machine_counts(op, tuple(dict(shape).items()), knobs, None)
        out[key(op, shape, knobs)] = {"sass_hash": m.sass_hash, "emulator": emulator_hash(), "counts": to_json(m)}
        progress(f"{key(op, shape, knobs)}: {m.seconds:.1f} s")
    doc = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "entries": dict(sorted(out.items())), "note": __doc__.split("\n\n")[1].replace("\n", " ")}
    PATH.write_text(rows_json(doc, "entries"))
    entries.cache_clear()
    return doc
