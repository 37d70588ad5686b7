"""Replace rows of a committed benchmark table with re-measured ones (same op and shape), keeping each
row's own date: python -m bench.merge BASE.json NEW.json [NEW2.json ...] > MERGED.json"""
from __future__ import annotations

import json
import sys


def merge(base: dict, *new: dict) -> dict:
    out = dict(base)
    rows = [dict(r, started=r.get("started", base.get("started", base.get("date")))) for r in base["rows"]]
    for t in new:
        for r in t["rows"]:
            r = dict(r, started=t["date"])
            rows = [x if (x["op"], x["shape"]) != (r["op"], r["shape"]) else r for x in rows]
    out["rows"] = rows
    return out


if __name__ == "__main__":
    print(json.dumps(merge(*(json.load(open(p)) for p in sys.argv[1:])), indent=1))
