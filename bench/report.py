"""The README's H200 table, generated from data/h200_bench.json (tests/test_readme.py checks they agree).

    python -m bench.report
"""
from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "h200_bench.json"


def _shape(s: dict) -> str:
    return "x".join(str(v) for v in s.values()) if len(set(s.values())) > 1 else f"{next(iter(s.values()))}^{len(s)}"


def table(path: Path = DATA) -> str:
    d = json.load(open(path))
    out = ["| operator, shape | reference | reference ms | best ms | best / ref. speed | goal | met | vs dlight | "
           "vs naive | vs baseline |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in d["rows"]:
        runs, ref = row["runs"], row["reference"]["median_ms"]
        best = runs[row["best_run"]]["median_ms"]

        def x(name):
            r = runs.get(name, {})
            return f"{r['median_ms'] / best:.1f}x" if "median_ms" in r else "n/a"
        shape = ",".join(f"{k}={v}" for k, v in row["shape"].items())
        out.append(f"| {row['op']} {shape} | {row['reference']['name']} | {ref:.4f} | {best:.4f} | "
                   f"{ref / best:#.3g}x | {row['goal']}x | {'yes' if ref / best >= row['goal'] else 'no'} | "
                   f"{x('dlight')} | {x('naive')} | {x('baseline')} |")
    out.append("")
    dates = sorted({r.get("started", d["started"]) for r in d["rows"]})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]} (each row's date is in the data)"
    out.append(f"Measured on {d['device']}, {when}, {d['versions']}; `{d['command']}`. "
               f"{d['reference_timing']}.")
    return "\n".join(out)


def update_readme(path: Path = DATA.parent.parent / "README.md") -> None:
    text = path.read_text()
    head, rest = text.split("<!-- h200-table -->")
    _, tail = rest.split("<!-- /h200-table -->")
    path.write_text(f"{head}<!-- h200-table -->\n{table()}\n<!-- /h200-table -->{tail}")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--readme"]:
        update_readme()
    else:
        print(table())
