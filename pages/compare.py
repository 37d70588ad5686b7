"""Compare: two schedules of one operator and shape side by side: animations in step, counts, a diff of their
TensorIR, and their times (live on the CPU, recorded on the GPU)."""
from __future__ import annotations

import difflib

import pandas as pd
import streamlit as st

import viz
from kernels import build
from kernels import knobs as K
from kernels.ops import OPS
from kernels.records import totals
from pages._parts import lab as L
from pages._parts import recorded as R
from pages._parts import ui
from pages._parts.frame import through_app

through_app()

ss = st.session_state
ASKED: set = set()
NCU = {"smsp__inst_executed_op_global_ld.sum": "global load instr.",
       "smsp__inst_executed_op_global_st.sum": "global store instr.",
       "smsp__inst_executed_op_shared_ld.sum": "shared load instr.",
       "smsp__inst_executed_op_shared_st.sum": "shared store instr.",
       "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global load sectors"}


def pick_shape(op: str) -> dict:
    size = st.segmented_control("Shape", L.SIZES, key="size", bind="query-params", default="speed test",
                                required=True)
    shape = dict(OPS[op].sizes[size if size in OPS[op].sizes else "speed test"])
    if size == "custom":
        text = st.text_input("Custom shape", value=L.shape_text(shape), key="shape", bind="query-params",
                             help=f"{op} takes {', '.join(OPS[op].dims)} as name=value, comma separated.")
        shape = K.parse_shape(op, text)
    return shape


def schedule(side: str, op: str, target: str, shape: dict, default: str):
    """One side's preset and knob overrides -> (label, knobs); raises KnobError with the sentences."""
    st.markdown(f"**Schedule {side.upper()}**")
    preset = st.selectbox("Preset", K.PRESET_NAMES, index=K.PRESET_NAMES.index(default), key=side,
                          bind="query-params")
    text = st.text_input("Knob overrides", key=f"{side}_knobs", bind="query-params", placeholder="e.g. cache_a=shared",
                         help="Knobs that differ from the preset, as name=value, comma separated. The knobs are "
                              + ", ".join(f.name for f in L.knob_fields(op, target)) + ".")
    knobs = K.resolve(op, target, shape, preset, text or None)
    name = f"{side.upper()}: {preset}" + (f" + {text}" if text else "")
    st.caption(f"`{K.knobs_text(knobs)}`")
    return name, knobs


@st.cache_resource(max_entries=32, show_spinner=False)
def pair_figure(op: str, a, b, target: str, name_a: str, name_b: str, thread: int | None):
    ta, tb = (L.tile_trace(op, k, target)[2] for k in (a, b))
    return viz.tile_pair(ta, tb, name_a, name_b, thread=thread, block=None if thread is None else 0)


def tiles(op, target, sides) -> None:
    st.subheader("The drawable tiles, in step")
    view = st.segmented_control("Follow", ["all threads", "thread 0 of block 0"], key="cmp_view",
                                default="all threads", required=True)
    (na, ka), (nb, kb) = sides
    fig = pair_figure(op, ka, kb, target, na, nb, None if view == "all threads" else 0)
    ui.chart(fig, "cmp_pair", f"compare-{op}-{target}-tiles")
    st.caption("One slider and one play button drive both: each frame shows both schedules the same fraction of "
               "the way through their own accesses, so they start and finish together.")


def counts(op, target, shape, sides) -> None:
    st.subheader("Reads at each level")
    tile_sets, full, notes = {}, {}, []
    for name, k in sides:
        tile_sets[name] = totals(L.tile_trace(op, k, target)[2].records)
        try:
            full[name] = ui.counts(op, shape, k, target, 1.5, ASKED)
        except Exception as e:  # noqa: BLE001
            notes.append(f"{name} at full size: {' '.join(L.sentences(e))}")
    panels = {"drawable tile": tile_sets}
    if full:
        panels[f"full size ({L.shape_text(shape)})"] = {n: c.level_totals("read") for n, c in full.items()}
    ui.chart(viz.level_bars(panels, title="Element reads per level"), "cmp_bars", f"compare-{op}-{target}-counts")
    for s in notes:
        st.caption(s)
    if len(full) == 2:
        rows = {n: {f"{lv} reads": v for lv, v in c.level_totals("read").items()} for n, c in full.items()}
        if target == "cuda":
            for n, c in full.items():
                rows[n].update({NCU[m]: c.ncu.get(m) for m in NCU})
                if "error" in c.machine:
                    st.caption(f"{n}: {c.machine['error']}")
        table = pd.DataFrame(rows)
        (a, b) = list(full)
        table["B / A"] = [f"{tb / ta:.3g}x" if ta and pd.notna(ta) and pd.notna(tb) else ""
                          for ta, tb in zip(table[a], table[b])]
        st.dataframe(table, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="localized") for c in (a, b)})


def tir_diff(op, target, shape, sides) -> None:
    st.subheader("TensorIR, A against B")
    (na, ka), (nb, kb) = sides
    if ka == kb:
        st.info("The two schedules have the same knobs, so their TensorIR is identical.")
        return
    a, b = (L.code(op, tuple(shape.items()), k, target, "tir").splitlines() for k in (ka, kb))
    diff = "\n".join(difflib.unified_diff(a, b, fromfile=na, tofile=nb, lineterm="", n=2))
    st.caption(f"A unified diff of the scheduled TensorIR (TVMScript): `-` lines are only in A, `+` only in B; "
               f"{len(a)} and {len(b)} lines.")
    st.code(diff, language="diff", height=480)
    st.download_button("Download the diff", diff, file_name=f"compare-{op}-{target}.diff", key="cmp_diff_dl",
                       on_click="ignore", icon=":material/download:")


def timings(op, target, shape, sides) -> None:
    st.subheader("Times")
    why = build.target_available(target)
    if why is None:
        if st.button("Compile & time both on this CPU", key="cmp_run", type="primary",
                     help="Compile, verify and time both schedules here (cached, recorded in the results store)."):
            with st.status("Compiling, verifying and timing…", expanded=True) as status:
                got = {}
                for name, k in sides:
                    st.write(f"{name}: `{K.knobs_text(k)}`")
                    got[name] = L.run(op, tuple(shape.items()), k, target, "")
                ss.setdefault("cmp_runs", {})[(op, tuple(shape.items()), *(k for _, k in sides))] = got
                status.update(label="Both timed", state="complete", expanded=False)
        got = ss.get("cmp_runs", {}).get((op, tuple(shape.items()), *(k for _, k in sides)))
        if not got:
            st.caption("Press the button to time both here; nothing is compiled until then.")
            return
        (na, ra), (nb, rb) = got.items()
        m = st.columns(3)
        m[0].metric(na, f"{ra.median_ms:.4g} ms", f"{'ok' if ra.ok else 'FAILED'} · rel. err {ra.rel_err:.1e}",
                    delta_color="off", delta_arrow="off")
        m[1].metric(nb, f"{rb.median_ms:.4g} ms", f"{'ok' if rb.ok else 'FAILED'} · rel. err {rb.rel_err:.1e}",
                    delta_color="off", delta_arrow="off")
        m[2].metric("A time / B time", f"{ra.median_ms / rb.median_ms:.2f}x", help="above 1: B is faster")
        st.caption(f"{ra.device} · {ra.date[:19]} · {ra.versions}")
        return
    st.caption(f"{why} Recorded GPU runs with exactly these knobs at this shape:")
    runs = ui.recorded_runs()
    found = {name: R.latest(R.find(runs, op, shape, k, target)) for name, k in sides}
    cols = st.columns(3)
    for col, (name, r) in zip(cols, found.items()):
        if r is None:
            col.metric(name, "none recorded", delta_color="off", delta_arrow="off")
        else:
            col.metric(name, f"{r['median_ms']:.4g} ms", f"{r['device']}, {str(r['date'])[:10]} · recorded as "
                       f"{r['name']}", delta_color="off", delta_arrow="off")
    ra, rb = found.values()
    if ra is not None and rb is not None:
        same = ra["run"] == rb["run"]
        cols[2].metric("A time / B time", f"{ra['median_ms'] / rb['median_ms']:.2f}x",
                       "same table" if same else "different tables", delta_color="off", delta_arrow="off",
                       help="above 1: B is faster")
    else:
        missing = [n for n, r in found.items() if r is None]
        st.caption("No GPU run is recorded for " + " or ".join(missing) + " at this shape, so no ratio; the "
                   "Benchmarks page lists every recorded run.")


# ---------------------------------------------------------------- the page
st.title("Compare two schedules")
st.caption("Same operator, same shape, two knob sets: watch both tiles play together, then read their counts, "
           "their TensorIR diff and their times.")
top = st.columns([1.3, 1, 2])
ui.from_url("op", OPS, "gemm")
op = top[0].selectbox("Operator", list(OPS), format_func=lambda o: OPS[o].title, key="op")
ui.to_url("op", op, "gemm")
# cpu and cuda: the fpga target (simulated, with its own level names and times) is shown in the Lab only
target = top[1].radio("Target", ("cpu", "cuda"), key="target", bind="query-params", horizontal=True, index=1)
with top[2]:
    shape = ui.guarded(pick_shape, op)
if shape is None:
    st.stop()
left, right = st.columns(2, gap="large")
with left:
    a = ui.guarded(schedule, "a", op, target, shape, "seed")
with right:
    b = ui.guarded(schedule, "b", op, target, shape, "best")
if a is None or b is None:
    st.warning("Fix the knobs above to compare.")
    st.stop()
sides = (a, b)
ui.guarded(tiles, op, target, sides)
ui.guarded(counts, op, target, shape, sides)
ui.guarded(timings, op, target, shape, sides)
ui.guarded(tir_diff, op, target, shape, sides)
ui.share_link("compare")
if L.counting(ASKED):
    ui.poll(set(ASKED))
