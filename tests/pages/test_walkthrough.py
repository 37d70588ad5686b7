"""The Walkthrough page through streamlit.testing: every step (the seed's and those past it, at both sizes), the
recorded times read back from data/ and compared, the last step being best, the level verdict."""
import json
import re
import shutil
import statistics

import pytest

from kernels import knobs as K
from pages._parts import walk as W
from pages._parts import walk_runs as WR
from pages_app import ROOT, no_failures, open_page


@pytest.fixture
def walk(tmp_path, monkeypatch):
    return open_page("walkthrough", tmp_path, monkeypatch)


def _measured(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Measured."))


def _verdict(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**On the "))


@pytest.mark.parametrize("step", range(len(W.ALL)))
def test_every_step_shows_its_tile_counts_and_times(walk, step):
    walk.button_group(key="step").set_value(step).run()
    no_failures(walk)
    assert not walk.error, [e.value for e in walk.error]
    assert any(s.value.startswith(f"Step {step}") or (step == 0 and "baseline" in s.value) for s in walk.subheader)
    assert len(walk.get("plotly_chart")) >= 4           # tile, counts, times, levels
    assert len(walk.get("download_button")) >= 4        # each chart as standalone HTML


def test_recorded_steps_say_their_time_and_missing_shapes_say_so(walk):
    walk.button_group(key="step").set_value(2).run()
    text = _measured(walk)                                # walk-2 and walk-1 were timed on the H200 at 1024^3
    assert "M=N=K=1024 step 2 ran in" in text and "faster than step 1" in text
    assert "No run is recorded at M=N=K=4096" in text     # ... and not at 4096^3: said, not invented


def test_the_level_verdict_comes_from_the_numbers(tmp_path, monkeypatch, walk):
    before = _verdict(walk)
    assert "shared memory beat registers for GEMM" in before
    data = tmp_path / "data"
    data.mkdir()
    doc = json.load(open(ROOT / "data" / "h200_bench.json"))
    for row in doc["rows"]:                               # make registers win everywhere
        runs = row["runs"]
        if "seed-local" in runs:
            runs["seed-local"]["median_ms"] = min(r["median_ms"] for r in runs.values() if "median_ms" in r) / 2
    json.dump(doc, open(data / "h200_bench.json", "w"))
    shutil.copy(ROOT / "data" / "h200_ceilings.json", data)
    monkeypatch.setenv("KERNEL_LAB_DATA", str(data))
    walk.run()
    no_failures(walk)
    after = _verdict(walk)
    assert after != before and "registers beat shared memory for GEMM" in after and "agrees with the seed" in after


def test_the_cpu_progression_is_timed_live_behind_the_button(walk):
    walk.button_group(key="walk_cpu_shape").set_value("M=N=K=256 (seconds)").run()
    assert not any("baseline →" in m.value and "x**" in m.value for m in walk.markdown)
    walk.button(key="walk_cpu_run").click().run()
    no_failures(walk)
    line = next(m.value for m in walk.markdown if m.value.startswith("On ") and "M=N=K=256" in m.value)
    assert "baseline" in line and "best" in line and "x**" in line
    from kernels import results
    assert {"baseline", "seed", "best"} <= set(results.load()["preset"])


# ---------------------------------------------------------------- from the seed to best
SIZES = {"speed test": {"M": 1024, "N": 1024, "K": 1024}, "large": {"M": 4096, "N": 4096, "K": 4096}}
PAST = [s.n for s in W.BEYOND]
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
MEASURED_LOOKING = re.compile(r"\d+\.\d+|\d+\s*(?:ms|%)|\d+x\b")


def _step(tmp_path, monkeypatch, n, size="speed test", data=None):
    if data is not None:
        monkeypatch.setenv("KERNEL_LAB_DATA", str(data))
    at = open_page("walkthrough", tmp_path, monkeypatch, {"step": str(n), "size": size})
    no_failures(at)
    assert not at.error, [e.value for e in at.error]
    return at


def _block(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Measured on the NVIDIA H200.**"))


def _plain(text: str) -> str:
    """The text without its `code` spans (file names, run names, dates and commands, all read from data/)."""
    return re.sub(r"`[^`]*`", "", text)


def _recorded(src, shape, root=ROOT / "data"):
    """Read straight from the JSON, without the page's reader: (knob text, median ms, same-run reference ms or
    None, ratio to it or None, command, every kernel of that process at this shape as (knob text, median ms))."""
    doc = json.load(open(root / src.file))
    if "rows" in doc:                                            # bench/h200.py table
        row = next(r for r in doc["rows"] if r["op"] == "gemm" and r["shape"] == shape)
        r = row["runs"][src.name]
        same = r.get("started") == row.get("started")
        ref = row["reference"]["median_ms"] if same else None
        peers = [(x.get("knobs"), x["median_ms"]) for x in row["runs"].values() if x.get("started") == r.get("started")]
        return r["knobs"], r["median_ms"], ref, ref / r["median_ms"] if ref else None, doc["command"], peers
    runs = [x for x in doc.get("runs", [doc]) if not src.date or x.get("date") == src.date]
    for run in runs:
        for s in run["shapes"]:
            if s["shape"] != shape:
                continue
            if "best_ms" in s:                                   # alternating rounds
                side = ((s["knobs"], s["best_ms"], s["ratios"]) if src.name == "best" else
                        (s["variant"]["knobs"], s["variant"]["ms"], s["variant"]["ratios"]))
                peers = [(s["knobs"], statistics.median(s["best_ms"])),
                         (s["variant"]["knobs"], statistics.median(s["variant"]["ms"]))]
                return (side[0], statistics.median(side[1]), statistics.median(s["ref_ms"]),
                        statistics.median(side[2]), run.get("command", doc.get("command")), peers)
            if src.name in s["runs"]:                            # named runs beside one reference
                r, ref = s["runs"][src.name], s["reference"]["median_ms"]
                peers = [(x.get("knobs"), x["median_ms"]) for x in s["runs"].values() if "median_ms" in x]
                command = run.get("command", doc.get("command"))
                return r["knobs"], r["median_ms"], ref, ref / r["median_ms"], command, peers
    return None


def _seed_step_ms(n: int, shape: dict) -> float | None:
    """What the seed's steps show, read straight from the table: the run with exactly step n's knobs at this shape
    (its `walk-n` run first, else the latest), or None."""
    doc = json.load(open(ROOT / "data" / "h200_bench.json"))
    row = next(r for r in doc["rows"] if r["op"] == "gemm" and r["shape"] == shape)
    knobs = W.knobs(W.STEPS[n], shape)
    hits = [(name != f"walk-{n}", r.get("started", ""), r["median_ms"]) for name, r in row["runs"].items()
            if r.get("knobs") and K.parse_knobs("gemm", "cuda", r["knobs"]) == knobs]
    hits = sorted(sorted(hits, key=lambda h: h[1], reverse=True), key=lambda h: h[0])   # walk-n, then latest
    return hits[0][2] if hits else None


@pytest.mark.parametrize("step", range(len(W.STEPS)))
@pytest.mark.parametrize("size", list(SIZES))
def test_the_seed_steps_show_their_recorded_times_at_both_sizes(tmp_path, monkeypatch, step, size):
    at = _step(tmp_path, monkeypatch, step, size)
    text = next(m.value for m in at.markdown if m.value.startswith("**Measured.**"))
    for shape in SIZES.values():
        words, ms = W.shape_words(shape), _seed_step_ms(step, shape)
        if ms is None:
            assert f"No run is recorded at {words}" in text
            continue
        assert f"at {words} step {step} ran in {ms:.4g} ms" in text
        before = _seed_step_ms(step - 1, shape) if step else None
        if before:
            v = before / ms
            assert (f"{v:.2f}x faster than step {step - 1}" if v >= 1 else f"{1 / v:.2f}x slower") in text


@pytest.mark.parametrize("step", PAST)
@pytest.mark.parametrize("size", list(SIZES))
def test_every_step_past_the_seed_shows_its_recorded_times_at_both_sizes(tmp_path, monkeypatch, step, size):
    at = _step(tmp_path, monkeypatch, step, size)
    s = W.ALL[step]
    knobs = W.knobs(s, SIZES[size])
    assert knobs == K.resolve("gemm", "cuda", SIZES[size], None, s.text_at(SIZES[size]))   # knobs of the engine
    assert any(c.value == f"Knobs at {W.shape_words(SIZES[size])}: `{K.knobs_text(knobs)}`" for c in at.caption)
    assert any(m.value == f"> **Why.** {s.why}" for m in at.markdown)
    block, captions = _block(at), " ".join(c.value for c in at.caption)
    allowed = {str(step), str(step - 1), "1024", "4096"}
    for shape in SIZES.values():
        text, ms, ref, ratio, command, peers = _recorded(s.sources[0], shape)
        assert WR.same_knobs(text, W.knobs(s, shape))             # the run timed exactly the step's knobs
        words = W.shape_words(shape)
        line = next(x for x in block.split("\n") if f"**{words}:**" in x)
        assert line.startswith(f"- **{words}:** {WR.ms(ms)} ms, ")
        if ratio is None:
            assert "no cuBLAS time from the same run is recorded" in line
        else:
            assert f"**{WR.ratio(ratio)}** cuBLAS's speed, cuBLAS {WR.ms(ref)} ms in the same run" in line
            allowed |= {WR.ratio(ratio)[:-1], WR.ms(ref)}
        allowed.add(WR.ms(ms))
        if (m := re.search(r"([\d.]+)x (faster|slower) than step \d+ \(([\d.]+) ms in (the same|a different) run"
                           r"(?:, `data/([^`]+)` `([^`]+)`)?", line)):
            shown, prev = m.group(1), m.group(3)
            if m.group(4) == "the same":                           # the step before, timed in this same run
                before = W.knobs(W.ALL[step - 1], shape)
                prev_ms = next(v for t, v in peers if t and K.parse_knobs("gemm", "cuda", t) == before)
                assert WR.ms(prev_ms) == prev
            else:                                                 # ... or its own run, named
                src = (W.ALL[step - 1].sources or W.SEED_SOURCE)[0]
                assert (m.group(5), m.group(6)) == (src.file, src.name)
                prev_ms = _recorded(src, shape)[1]
                assert WR.ms(prev_ms) == prev
            v = prev_ms / ms
            assert shown == WR.factor(v if m.group(2) == "faster" else 1 / v)[:-1]
            allowed |= {shown, prev}
        assert f"`data/{s.sources[0].file}`, run `{s.sources[0].name}`" in captions and f"`{command}`" in captions
    device = json.load(open(ROOT / "data" / s.sources[0].file))["device"]       # the heading names it
    for n in NUMBER.findall(_plain(block.replace(device, ""))):  # nothing in the block that data/ does not hold
        assert n in allowed, (n, block)
    for text in (s.why, s.reading):                               # and no measurement typed into the words
        assert not MEASURED_LOOKING.search(_plain(text)), text


def test_the_nsight_compute_counters_are_the_recorded_ones(tmp_path, monkeypatch):
    for s in W.BEYOND:
        if not s.evidence:
            continue
        at = _step(tmp_path, monkeypatch, s.n)
        shown = [m.value for m in at.markdown if m.value.startswith("**Nsight Compute**")]
        doc = json.load(open(ROOT / "data" / s.evidence[0].file))
        for ev, line in zip(s.evidence, shown, strict=True):
            k = next(x for x in doc["kernels"] if x["who"] == ev.who and x["date"] == ev.date)
            values = [WR.count(k[metric]) for metric, _ in ev.metrics]
            at_shape = {str(v) for v in doc["shape"].values()}              # "at M=N=K=4096", from the file
            assert [n for n in NUMBER.findall(_plain(line)) if n not in at_shape] == values, line


@pytest.mark.parametrize("size", list(SIZES))
def test_the_last_step_is_best(tmp_path, monkeypatch, size):
    shape, last = SIZES[size], W.ALL[-1]
    best = K.knobs_text(K.preset("gemm", "cuda", "best", shape))
    assert last.short == "best"
    assert K.knobs_text(K.resolve("gemm", "cuda", shape, None, last.text_at(shape))) == best
    at = _step(tmp_path, monkeypatch, last.n, size)
    assert any(c.value == f"Knobs at {W.shape_words(shape)}: `{best}`" for c in at.caption)
    assert any(c.value.startswith("These are `best`'s knobs at M=N=K=1024") for c in at.caption)


def test_the_summary_table_is_the_recorded_runs(walk):
    table = next(d.value for d in walk.dataframe if "vs cuBLAS" in d.value)
    for n in [len(W.STEPS) - 1, *PAST]:
        src = (W.ALL[n].sources or W.SEED_SOURCE)[0]
        for shape in SIZES.values():
            _, ms, _, ratio, command, _ = _recorded(src, shape)
            row = table[(table["step"] == W.label(n)) & (table["shape"] == W.shape_words(shape))].iloc[0]
            assert row["median ms"] == WR.ms(ms) and row["file"] == f"data/{src.file}" and row["command"] == command
            assert row["vs cuBLAS"] == (WR.ratio(ratio) if ratio else "")


def _copy_data(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data", data)
    return data


def test_a_size_without_a_run_says_it_was_not_measured(tmp_path, monkeypatch):
    data = _copy_data(tmp_path)
    doc = json.load(open(data / "h200_kmajor.json"))
    run = next(r for r in doc["runs"] if r["date"] == "2026-12-03T16:52:00Z")
    small = next(s for s in run["shapes"] if s["shape"]["M"] == 1024)
    del small["runs"]["km128p8k16"]                               # as if run 27 had timed it at 4096^3 only
    json.dump(doc, open(data / "h200_kmajor.json", "w"))
    block = _block(_step(tmp_path, monkeypatch, 12, data=data))
    assert "**M=N=K=1024:** not measured (`data/h200_kmajor.json` has no run `km128p8k16` at this shape)" in block
    assert f"**M=N=K=4096:** {WR.ms(_recorded(W.ALL[12].sources[0], SIZES['large'])[1])} ms" in block


def test_a_run_with_other_knobs_is_not_shown_as_the_step(tmp_path, monkeypatch):
    data = _copy_data(tmp_path)
    doc = json.load(open(data / "h200_kmajor.json"))
    run = next(r for r in doc["runs"] if r["date"] == "2026-12-03T16:52:00Z")
    big = next(s for s in run["shapes"] if s["shape"]["M"] == 4096)
    big["runs"]["km128p8k16"]["knobs"] = big["runs"]["km128p8k16"]["knobs"].replace("k_split=16", "k_split=8")
    json.dump(doc, open(data / "h200_kmajor.json", "w"))
    block = _block(_step(tmp_path, monkeypatch, 12, data=data))
    assert "**M=N=K=4096:** not measured (`data/h200_kmajor.json` records `km128p8k16` with other knobs" in block
    assert f" {WR.ms(big['runs']['km128p8k16']['median_ms'])} ms" not in block


@pytest.mark.parametrize("step", [3, 12, 14])
def test_a_step_link_opens_that_step_old_and_new(tmp_path, monkeypatch, step):
    at = _step(tmp_path, monkeypatch, step, "large")
    assert at.subheader[0].value.startswith(f"Step {step}:")
    assert at.button_group(key="step").value == step
