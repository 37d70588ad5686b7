"""Walkthrough: the seed's GEMM story as four clickable steps, then the steps that took it to `best` on the H200,
each with its drawable tile, its counts and its measured times (past the seed: the reason, both sizes, the ratio
to cuBLAS timed in the same run, and the data file behind every number); the CPU's own progression timed live;
then which cache level won, from the measurements."""
from __future__ import annotations


import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import viz
from kernels import knobs as K
from kernels.records import totals
from pages._parts import lab as L
from pages._parts import recorded as R
from pages._parts import ui
from pages._parts import walk as W
from pages._parts import walk_best as B
from pages._parts.frame import through_app

through_app()

ss = st.session_state
ASKED: set = set()
CPU_SIZES = {"M=N=K=256 (seconds)": 256, "M=N=K=512 (a few seconds)": 512,
             "M=N=K=1024, the speed test (about 1½ minutes here)": 1024}
NCU_SHOWN = {"smsp__inst_executed_op_global_ld.sum": "global load instructions",
             "smsp__inst_executed_op_global_st.sum": "global store instructions",
             "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors (32 B)"}


# ---------------------------------------------------------------- sections
def step_section(n: int, shape: dict, times: pd.DataFrame) -> None:
    step, prev_step = W.ALL[n], W.ALL[max(n - 1, 0)]
    knobs, prev = W.knobs(step, shape), W.knobs(prev_step, shape)
    st.subheader(f"Step {n}: {step.title}" if n else "Where the course starts: the baseline")
    st.markdown(f"> *{step.seed}* — the seed" if step.seed else f"> **Why.** {step.why}")
    st.markdown(step.reading)
    st.caption(f"Knobs at {W.shape_words(shape)}: `{K.knobs_text(knobs)}`")
    if n:
        changes = W.changed(prev, knobs)
        st.caption("Changed from step " + (f"{n - 1}" if n > 1 else "0 (the baseline)") + ": "
                   + ("; ".join(f"`{c}`" for c in changes) if changes else "nothing at this size"))
    if n >= B.FIRST and (where := B.best_at(n)):
        st.caption(f"These are `best`'s knobs at {' and '.join(where)} (`kernels.knobs.preset`).")
    left, right = st.columns([1.1, 1], gap="large")
    with left:
        ui.guarded(tile, n, knobs)
    with right:
        ui.guarded(counts, n, knobs, prev, shape)
    if n < len(W.STEPS):
        st.markdown(f"**Measured.** {W.time_sentence(times, n)}")
    else:
        ui.guarded(measured_section, n)


def measured_section(n: int) -> None:
    recs = B.measured(n)
    st.markdown(B.heading(recs) + "\n\n" + "\n\n".join(f"- {B.sentence(r)}" for r in recs))
    for line in B.evidence_lines(n):
        st.markdown(line)
    for line in B.source_lines(recs):
        st.caption("Data. " + line)


def tile(n: int, knobs) -> None:
    tshape, tknobs, trace = L.tile_trace(W.OP, knobs, W.TARGET)
    fig = L.tile_figure(W.OP, knobs, W.TARGET, None, None)
    ui.chart(fig, f"walk_tile_{n}", f"walkthrough-step{n}-tile")
    st.caption(f"The drawable tile `{L.shape_text(tshape)}` with the knobs scaled down with it: "
               f"`{K.knobs_text(tknobs)}`; {trace.blocks} block(s) x {trace.threads} thread(s). Press play.")


def counts(n: int, knobs, prev, shape: dict) -> None:
    names = {f"step {n - 1}": prev, f"step {n}": knobs} if n else {"step 0": knobs}
    tile_sets = {k: totals(L.tile_trace(W.OP, v, W.TARGET)[2].records) for k, v in names.items()}
    full, notes = {}, []
    for k, v in names.items():
        try:
            full[k] = ui.counts(W.OP, shape, v, W.TARGET, 1.0, ASKED)
        except Exception as e:  # noqa: BLE001
            notes.append(f"{k} at full size: {' '.join(L.sentences(e))}")
    panels = {"drawable tile": tile_sets}
    if full:
        panels[f"full size ({W.shape_words(shape)})"] = {k: c.level_totals("read") for k, c in full.items()}
    ui.chart(viz.level_bars(panels, title="Element reads per level"), f"walk_bars_{n}", f"walkthrough-step{n}-counts")
    notes += [f"{k}: {c.machine['error']}" for k, c in full.items() if "error" in c.machine]
    for s in notes:
        st.caption(s)
    if full:
        table = pd.DataFrame({k: {NCU_SHOWN[m]: c.ncu.get(m) for m in NCU_SHOWN} for k, c in full.items()})
        st.markdown("**Nsight Compute's counts at full size** (warp-level instructions of the compiled SASS, "
                    "emulated; the Hardware check page shows how they compare with the H200's counters)")
        st.dataframe(table, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="localized") for c in table})


def times_section(times: pd.DataFrame) -> None:
    st.subheader("The seed's steps, as measured")
    if times.empty:
        st.info("No GPU runs of GEMM are recorded under data/.")
        return
    got = times[times["median_ms"].notna()]
    if not got.empty:
        fig = viz.grouped_bars(got.assign(where=got["shape"] + ", " + got["run"]), "step", "median_ms", "where",
                               title="Median time per step (recorded runs with exactly the step's knobs)",
                               y_title="median ms", log=True, hover=("recorded as",))
        ui.chart(fig, "walk_times", "walkthrough-times")
    shown = times.drop(columns=["n", "date"]).assign(
        median_ms=lambda d: d["median_ms"].map(lambda v: f"{v:.4g}" if pd.notna(v) else "none recorded"),
        **{"vs previous step": lambda d: d["vs previous step"].map(lambda v: f"{v:.2f}x" if pd.notna(v) else "")})
    st.dataframe(shown, hide_index=True, width="stretch")
    st.caption("A step shows a time only where a recorded run used exactly its knobs; none is invented. The step "
               "knob sets are `walk-1`..`walk-4` in bench/variants.py, exact at M=N=K=1024 (where they have been "
               "timed); a step with no run at a shape says `none recorded`.")


def cpu_section() -> None:
    st.subheader("On this machine's CPU")
    st.markdown("The four steps are GPU decisions (blocks, threads, shared memory), so they do not apply to the CPU "
                "as such. The CPU's own GEMM progression is `baseline` (the plain loop nest) → `seed` (split and "
                "reordered so the innermost loop walks contiguous memory, the sum kept in registers) → `best` "
                "(register patches, a packed B, all cores), timed live here.")
    pick = st.segmented_control("CPU shape", list(CPU_SIZES), key="walk_cpu_shape", default=list(CPU_SIZES)[1],
                                required=True)
    n = CPU_SIZES[pick]
    shape = {"M": n, "N": n, "K": n}
    got = ss.setdefault("walk_cpu", {})
    if st.button("Time baseline → seed → best on this CPU", key="walk_cpu_run", type="primary",
                 help="Compile, verify and time the three CPU presets (cached: a second press is instant)."):
        with st.status("Compiling, verifying and timing on this CPU…", expanded=True) as status:
            res = {}
            for p in ("baseline", "seed", "best"):
                k = K.preset("gemm", "cpu", p, shape)
                st.write(f"{p}: `{K.knobs_text(k)}`")
                res[p] = L.run("gemm", tuple(shape.items()), k, "cpu", p)
            got[n] = res
            status.update(label="Timed on this CPU", state="complete", expanded=False)
    if n not in got:
        st.caption("Press the button to time them (results are cached and recorded in this machine's results store).")
        return
    rows, prev = [], None
    for p, r in got[n].items():
        rows.append({"preset": p, "median ms": r.median_ms, "vs previous": f"{prev / r.median_ms:.2f}x" if prev else "",
                     "GFLOP/s": r.gflops, "verified": "ok" if r.ok else "FAILED", "rel. error": r.rel_err,
                     f"vs {r.ref}": f"{r.vs_ref:.2f}x" if r.vs_ref else "", "knobs": r.knobs})
        prev = r.median_ms
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    first, last = got[n]["baseline"], got[n]["best"]
    st.markdown(f"On {last.device} at M=N=K={n}: baseline {first.median_ms:.4g} ms → best {last.median_ms:.4g} ms, "
                f"**{first.median_ms / last.median_ms:.1f}x** ({last.date[:10]}).")


def levels_section(runs: pd.DataFrame) -> None:
    st.subheader("Which level wins: shared memory or registers?")
    st.markdown("> *The textbook answer for GEMM is to stage tiles in shared memory… the one that actually "
                "benchmarked fastest caches to local scope instead… The same inversion showed up on the 1D "
                "convolution.* — the seed, on its course GPU")
    table = R.level_table(runs)
    st.markdown(f"**{R.level_sentence(table)}**")
    if not table.empty:
        long = table.melt(id_vars=["device", "op", "shape"], value_vars=[c for c in R.SCOPE_RUNS.values()
                                                                         if c in table], var_name="cache scope",
                          value_name="median_ms").dropna()
        long["where"] = long["op"].map(R.OP_WORDS) + " " + long["shape"].map(R._where) + " · " + long["device"]
        colors = {"local": viz.LEVEL_COLORS["register"], "shared": viz.LEVEL_COLORS["shared"],
                  "shared+local": "#66A8D4"}
        fig = viz.grouped_bars(long, "where", "median_ms", "cache scope", log=True, y_title="median ms",
                               colors=colors, title="The seed's knobs with the operands cached in registers, in "
                                                    "shared memory, or both")
        ui.chart(fig, "walk_levels", "which-level-wins")
        shown = table.assign(factor=table["factor"].map(lambda v: f"{v:.2f}x"), date=table["date"].str[:10])
        st.dataframe(shown, hide_index=True, width="stretch")
        st.caption("Times in ms, the latest recorded run of each variant per device (`seed-local`, `seed-shared`, "
                   "`seed-shared+local` in bench/variants.py: the seed preset's tiles with only the cache scope "
                   "changed). `factor` = the losing family's best time / the winner's time.")
    st.caption("This machine's CPU has no shared memory to choose: its caches are managed by the hardware, so "
               "the CPU schedules have no cache-scope knob and this question is asked of the GPU only.")


def best_section() -> None:
    st.subheader("From the seed to best, as measured")
    table = B.table()
    got = table[table["vs_ref"].notna()]
    bare = [s for s in dict.fromkeys(table["step"]) if s not in set(got["step"])]
    if not got.empty:
        fig = viz.grouped_bars(got.assign(ratio=got["vs_ref"].astype(float)), "step", "ratio", "shape",
                               title="Speed relative to cuBLAS timed in the same run (above 1x: faster)",
                               y_title="cuBLAS ms / kernel ms", log=False, unit="x", reference=1.0,
                               reference_label="cuBLAS", hover=("recorded as", "file", "run of"))
        fig.add_trace(go.Scatter(x=bare, y=[0.0] * len(bare), mode="text", textposition="top center",
                                 text=["no cuBLAS<br>in that run"] * len(bare), showlegend=False, hoverinfo="skip"))
        fig.update_xaxes(categoryarray=list(dict.fromkeys(table["step"])), tickangle=-30)   # every step, bar or not
        ui.chart(fig, "walk_best", "walkthrough-seed-to-best")
    st.dataframe(table.drop(columns=["n", "median_ms", "vs_ref"]), hide_index=True, width="stretch")
    st.caption("Each step's row is the run in data/ that timed exactly its knobs (the recorded knob text is "
               "checked against the step's); `vs cuBLAS` is cuBLAS's time over the kernel's where the file "
               "records cuBLAS timed in the same process, and blank where it does not. `vs previous step` says "
               "whether the two times come from one run or from two.")
    if bare:
        st.caption(f"No bar for {', '.join(bare)}: data/ records no cuBLAS time from the run that timed "
                   + ("them." if len(bare) > 1 else "it."))


# ---------------------------------------------------------------- the page
st.title("Walkthrough: the seed's GEMM, one decision at a time")
st.caption("Four decisions turn the course's baseline GEMM into the seed's schedule: tiles per block, a patch "
           "per thread, operands cached at a k split, vector loads. The steps after them are the decisions that "
           "took the seed's schedule to `best` on the H200. Each step below is the previous one plus that "
           "decision, as knobs of the same schedule engine the Lab uses, so its tile, counts and times come "
           "from the kernel itself.")
c = st.columns([4, 1])
ui.from_url("step", range(len(W.ALL)), 1)
n = c[0].segmented_control("Step", list(range(len(W.ALL))), format_func=W.label, key="step", required=True,
                           wrap=True)         # the seed's steps and the steps past it: two rows, all in view
ui.to_url("step", n, 1)
size = c[1].segmented_control("Counts at", list(W.SIZES), key="size", bind="query-params", default="speed test",
                             required=True)
shape = dict(W.SIZES[size])
runs = ui.guarded(ui.recorded_runs)
times = ui.guarded(W.step_times, runs) if runs is not None else None
times = times if times is not None else pd.DataFrame(columns=["step", "n", "date", "median_ms", "vs previous step"])
ui.guarded(step_section, n, shape, times)
ui.guarded(times_section, times)
ui.guarded(best_section)
ui.guarded(cpu_section)
if runs is not None:
    ui.guarded(levels_section, runs)
ui.share_link("walkthrough")
if L.counting(ASKED):
    ui.poll(set(ASKED))
