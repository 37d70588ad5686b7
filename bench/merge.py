"""Replace rows of a committed benchmark table with re-measured ones (same op and shape), keeping each
row's own date: python -m bench.merge BASE.json NEW.json [NEW2.json ...] > MERGED.json"""
from __future__ import annotations

import json
import sys


def merge(base: dict, *new: dict) -> dict:
    """A re-measured row replaces the reference and the runs it has; runs it did not repeat stay, each run
    keeping the date it was measured ('started')."""
    out = dict(base)
    rows = []
    for r in base["rows"]:
        when = r.get("started", base.get("started", base.get("date")))
        rows.append(dict(r, started=when, runs={n: dict(x, started=x.get("started", when))
                                               for n, x in r["runs"].items()}))
    for t in new:
        for r in t["rows"]:
            fresh = {n: dict(x, started=t["date"]) for n, x in r["runs"].items()}
            rows = [x if (x["op"], x["shape"]) != (r["op"], r["shape"]) else
                    dict(r, started=t["date"], runs={**x["runs"], **fresh}) for x in rows]
    out["rows"] = rows
    return out


if __name__ == "__main__":
    print(json.dumps(merge(*(json.load(open(p)) for p in sys.argv[1:])), indent=1))
