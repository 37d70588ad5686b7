"""From the seed to best: what the recorded runs say about each step past the seed, as the Walkthrough writes it.

Every number here is read from data/ by walk_runs at run time; the sentences only arrange them. Each step is
compared with the step before in the same run where that run also timed the previous step's knobs, and says
so where the two times come from different runs. Pure: no Streamlit, no TVM."""
from __future__ import annotations

import pandas as pd

from kernels import knobs as K

from . import walk as W
from . import walk_runs as WR

FIRST = len(W.STEPS) - 1            # the seed: where the steps past it start from


def sources(n: int) -> tuple[WR.Source, ...]:
    step = W.ALL[n]
    return step.sources or (W.SEED_SOURCE if n == FIRST else ())


def measured(n: int) -> list[dict]:
    """Step n (the seed or a step past it) at both sizes: the run that timed exactly its knobs (or why there is
    none), and the previous step's run to compare with."""
    out = []
    for shape in (dict(s) for s in W.SIZES.values()):
        k = W.knobs(W.ALL[n], shape)
        e, why = WR.lookup(sources(n), shape, k)
        rec = {"n": n, "shape": shape, "words": W.shape_words(shape), "entry": e, "why": why, "prev": None,
               "prev_same_run": False, "prev_same_knobs": False}
        if e is not None and n > FIRST:
            pk = W.knobs(W.ALL[n - 1], shape)
            if pk == k:
                rec["prev_same_knobs"] = True
            elif (p := WR.in_run(e, pk)) is not None:
                rec.update(prev=p, prev_same_run=True)
            else:
                rec["prev"] = WR.lookup(sources(n - 1), shape, pk)[0]
        out.append(rec)
    return out


def _ref(e: WR.Entry) -> str:
    lib = (e.ref or "the reference").split(" (")[0]
    if e.vs_ref is None:
        return f"no {lib} time from the same run is recorded" + (f" ({e.ref_note})" if e.ref_note else "")
    rounds = " (medians of the alternating rounds)" if e.rounds else ""
    return f"**{WR.ratio(e.vs_ref)}** {lib}'s speed, {lib} {WR.ms(e.ref_ms)} ms in the same run{rounds}"


def sentence(rec: dict) -> str:
    """One size of one step: its time, its ratio to the reference timed in the same run, and the step before."""
    n, e = rec["n"], rec["entry"]
    if e is None:
        return f"**{rec['words']}:** not measured ({rec['why']})."
    s = f"**{rec['words']}:** {WR.ms(e.median_ms)} ms, {_ref(e)}"
    p = rec["prev"]
    if rec["prev_same_knobs"]:
        s += f"; the same knobs as step {n - 1} at this size"
    elif p is not None:
        v = p.median_ms / e.median_ms
        s += (f"; {WR.factor(v)} faster than step {n - 1}" if v >= 1 else
              f"; {WR.factor(1 / v)} slower than step {n - 1}")
        s += (f" ({WR.ms(p.median_ms)} ms in the same run)" if rec["prev_same_run"] else
              f" ({WR.ms(p.median_ms)} ms in a different run, `data/{p.file}` `{p.name}`)")
    elif n > FIRST:
        s += f"; step {n - 1} has no recorded run at this size to compare with"
    return s + "."


def heading(recs: list[dict]) -> str:
    """"Measured on the <device>" as the data files name it."""
    devices = list(dict.fromkeys(r["entry"].device for r in recs if r["entry"] is not None and r["entry"].device))
    return f"**Measured on the {' and the '.join(devices) or 'GPU'}.**"


def source_lines(recs: list[dict]) -> list[str]:
    """Where each size's numbers come from: file, run, date, the reference as recorded, the command."""
    groups: dict[tuple, list[str]] = {}
    for r in recs:
        e = r["entry"]
        if e is not None:
            groups.setdefault((e.file, e.name, e.date, e.ref, e.command, e.ref_note if e.vs_ref else ""),
                              []).append(r["words"])
    return [f"At {' and '.join(words)}: `data/{file}`, run `{name}` of `{date}`; reference as recorded: `{ref}`"
            + (f" ({note})" if note else "") + f"; command: `{command}`"
            for (file, name, date, ref, command, note), words in groups.items()]


def evidence_lines(n: int) -> list[str]:
    """Nsight Compute's counters of the step's kernel, where data/ has them (named by run: the file records no
    knobs)."""
    out = []
    for ev in W.ALL[n].evidence:
        found = WR.counters(ev)
        if not found:
            continue
        got, command, shape = found
        vals = ", ".join(f"{WR.count(got[m])} {words}" for m, words in ev.metrics if m in got)
        out.append(f"**Nsight Compute** at {W.shape_words(shape)} (the kernel `{ev.who}` in `data/{ev.file}` of "
                   f"`{ev.date}`, `{command}`): {vals}.")
    return out


def best_at(n: int) -> list[str]:
    """The sizes at which step n's knobs are best's, each with the first earlier step that has them too."""
    out = []
    for shape in (dict(s) for s in W.SIZES.values()):
        k = W.knobs(W.ALL[n], shape)
        if k == K.preset(W.OP, W.TARGET, "best", shape):
            first = next((m for m in range(FIRST, n) if W.knobs(W.ALL[m], shape) == k), None)
            out.append(W.shape_words(shape) + (f" (step {first}'s)" if first is not None else ""))
    return out


def table() -> pd.DataFrame:
    """The seed and every step past it at both sizes, as recorded (strings as the page prints them)."""
    rows = []
    for n in range(FIRST, len(W.ALL)):
        for r in measured(n):
            e, p = r["entry"], r["prev"]
            vs = ("same knobs" if r["prev_same_knobs"] else "" if p is None or e is None else
                  WR.factor(p.median_ms / e.median_ms) + (" (same run)" if r["prev_same_run"] else " (different runs)"))
            rows.append({"step": W.label(n), "n": n, "shape": r["words"],
                         "median_ms": e.median_ms if e else None,
                         "median ms": WR.ms(e.median_ms) if e else "not measured",
                         "vs cuBLAS": WR.ratio(e.vs_ref) if e and e.vs_ref else "",
                         "vs_ref": e.vs_ref if e else None,
                         "cuBLAS ms (same run)": WR.ms(e.ref_ms) if e and e.vs_ref else "",
                         "vs previous step": vs, "recorded as": e.name if e else "",
                         "file": f"data/{e.file}" if e else "", "run of": e.date if e else "",
                         "command": e.command if e else r["why"]})
    return pd.DataFrame(rows)
