"""The Lab: pick an operator, shape, target and knobs; watch the drawable tile, read the counts, run the kernel."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

import viz
from kernels import build
from kernels import knobs as K
from kernels.ops import OPS
from kernels.records import LEVELS, passes_line, totals
from pages._parts import lab as L

ss = st.session_state
_t0 = time.perf_counter()


def _download(fig, name: str, key: str) -> None:
    st.download_button("Download as HTML", data=lambda: viz.to_html(fig, title=f"Kernel Lab: {name}"),
                       file_name=f"{name}.html", mime="text/html", key=key, on_click="ignore", icon=":material/download:")


def _num(x: float):
    return int(x) if float(x).is_integer() else round(float(x), 2)


# ---------------------------------------------------------------- what to look at
st.title("Kernel Lab")
top = st.columns([1.3, 1.6, 1, 1])
op = top[0].selectbox("Operator", list(OPS), format_func=lambda o: OPS[o].title, key="lab_op")
size = top[1].segmented_control("Shape", L.SIZES, default="speed test", key="lab_size", required=True)
target = top[2].radio("Target", L.TARGETS, key="lab_target", horizontal=True,
                      captions=[build.target_available(t) and "no GPU here: simulate and show source"
                                or "runs here" for t in L.TARGETS])
preset_name = top[3].selectbox("Preset", K.PRESET_NAMES, index=K.PRESET_NAMES.index("seed"), key="lab_preset")
st.caption(f"**{OPS[op].title}**: `{OPS[op].math}`")

shape = dict(OPS[op].sizes[size if size in OPS[op].sizes else "speed test"])
if size == "custom":
    text = st.text_input("Custom shape", value=L.shape_text(shape), key=f"lab_custom_{op}",
                         help=f"{op} takes {', '.join(OPS[op].dims)} as name=value, comma separated.")
    try:
        shape = K.parse_shape(op, text)
    except K.KnobError as e:
        for s in e.problems:
            st.error(s)
        shape = ss.get(f"lab_shape_ok_{op}", shape)
        st.caption(f"Using the last valid shape, {L.shape_text(shape)}.")
    ss[f"lab_shape_ok_{op}"] = shape
why_not = build.target_available(target)
if why_not:
    st.info(f"{why_not} The simulation, the counts, the CUDA source and the runs recorded on an H200 are below.")

# ---------------------------------------------------------------- knobs, generated from the knob dataclass
src = (op, target, tuple(shape.items()), preset_name)
base = K.preset(op, target, preset_name, shape)
wkey = {f.name: f"lab_k_{op}_{target}_{f.name}" for f in L.knob_fields(op, target)}
if ss.get("lab_src") != src:                  # a new operator, target, shape or preset loads its knobs
    for f in L.knob_fields(op, target):
        ss[wkey[f.name]] = getattr(base, f.name)
    ss["lab_src"] = src

left, main = st.columns([1, 3], gap="large")
values, slots = {}, {}
with left:
    st.subheader("Knobs")
    for f in L.knob_fields(op, target):
        meta, key, cur = f.metadata, wkey[f.name], ss[wkey[f.name]]
        choices = meta.get("choices")
        if choices == (False, True):
            values[f.name] = st.toggle(f.name, key=key, help=meta["help"])
        elif choices:
            if cur not in choices:
                ss[key] = choices[0]
            values[f.name] = st.selectbox(f.name, choices, key=key, help=meta["help"])
        else:
            extent = L.axis_of(base, f.name, shape)
            if extent:
                values[f.name] = st.select_slider(f.name, L.int_options(extent, cur), key=key, help=meta["help"])
            else:
                values[f.name] = st.number_input(f.name, min_value=meta.get("lo", 1), step=1, key=key,
                                                 help=meta["help"])
        slots[f.name] = st.empty()
    general = st.container()

knobs = K.knob_class(op, target)(**values)
problems = K.validate(op, target, knobs, shape)
for s in problems:
    name = L.field_for(s, list(values))
    (slots[name] if name else general).error(s, icon=":material/block:")
good_key = (op, target, tuple(shape.items()))
if not problems:
    ss.setdefault("lab_good", {})[good_key] = knobs
kn = ss.get("lab_good", {}).get(good_key)

with main:
    if problems:
        if kn is None:
            st.warning("Fix the knobs on the left to see this schedule.")
            st.stop()
        st.warning(f"Showing the last valid schedule until the knobs are fixed: `{K.knobs_text(kn)}`")
    edited = kn != base
    st.caption(f"Shape `{L.shape_text(shape)}` · knobs `{K.knobs_text(kn)}`"
               + (f" (edited from the `{preset_name}` preset)" if edited else f" (the `{preset_name}` preset)"))
    naive = K.preset(op, target, "naive", shape)
    variants = L.variants(op, target, kn, shape)

    # ------------------------------------------------------------ the drawable tile
    st.subheader("The drawable tile")
    tile = None
    if L.traffic is None:
        st.error(L.TRAFFIC_MISSING)
    else:
        try:
            tshape, tknobs, tile = L.tile_trace(op, kn, target)
        except Exception as e:      # noqa: BLE001 - the sentence, never a traceback
            for s in L.sentences(e):
                st.error(f"The simulator could not trace this schedule: {s}")
    if tile is not None:
        c = st.columns([1, 1, 3])
        blocks = ["all"] + list(range(tile.blocks))
        threads = ["all"] + list(range(tile.threads))
        for k, opts in (("lab_block", blocks), ("lab_thread", threads)):
            if ss.get(k) not in opts:
                ss[k] = "all"
        blk = c[0].selectbox("Block", blocks, key="lab_block")
        thr = c[1].selectbox("Thread", threads, key="lab_thread")
        blk, thr = (None if blk == "all" else blk), (None if thr == "all" else thr)
        c[2].caption(f"Tile `{L.shape_text(tshape)}`, knobs scaled with it: `{K.knobs_text(tknobs)}`. "
                     f"{tile.blocks} block(s) x {tile.threads} thread(s); {len(tile.records):,} accesses. "
                     "Press play, or drag the slider; click an output cell to follow its thread.")

        def _pick():
            sel = ss.get("lab_tile_chart")
            pts = getattr(getattr(sel, "selection", None), "points", None) or []
            if pts:
                got = viz.owner_at(tile, int(round(pts[0]["y"])), int(round(pts[0]["x"])))
                if got:
                    ss["lab_block"], ss["lab_thread"] = got

        fig = L.tile_figure(op, kn, target, blk, thr)
        st.plotly_chart(fig, theme=None, key="lab_tile_chart", on_select=_pick, selection_mode="points",
                        config={"displaylogo": False})
        _download(fig, f"{op}-{target}-tile", "lab_dl_tile")

    # ------------------------------------------------------------ counts
    st.subheader("Reads at each level")
    tile_sets, full_sets, notes = {}, {}, []
    named = {"current": kn, "naive": naive, **variants}
    headline = st.empty()                   # the current kernel's counts, drawn before the comparisons
    for label, k in named.items():
        if isinstance(k, list):
            notes.append(f"**{label}** is not a legal kernel here: {' '.join(k)}")
            continue
        if L.traffic is None:
            break
        try:
            tile_sets[label] = totals(L.tile_trace(op, k, target)[2].records)
        except Exception as e:      # noqa: BLE001
            notes.append(f"**{label}** (tile): {' '.join(L.sentences(e))}")
        try:
            full_sets[label] = L.full_counts(op, tuple(shape.items()), k, target).level_totals("read")
        except Exception as e:      # noqa: BLE001
            notes.append(f"**{label}** (full size): {' '.join(L.sentences(e))}")
        if label == "current":
            lines = [f"**Current kernel, {name}:** {viz.counter_text(sets['current'])}"
                     for name, sets in (("drawable tile", tile_sets), ("full size", full_sets)) if "current" in sets]
            headline.markdown("  \n".join(lines) or "No counts for the current kernel.")
            ss["lab_timing"] = {"tile and counts": time.perf_counter() - _t0}
    if tile_sets or full_sets:
        tile_label = f"drawable tile ({L.shape_text(tshape)})" if tile is not None else "drawable tile"
        panels = {tile_label: tile_sets, f"full size ({L.shape_text(shape)})": full_sets}
        bars = viz.level_bars({k: v for k, v in panels.items() if v},
                              title="Element reads per level: current knobs against naive and the cache variants")
        st.plotly_chart(bars, theme=None, key="lab_bars", config={"displaylogo": False})
        _download(bars, f"{op}-{target}-counts", "lab_dl_bars")
    for n in notes:
        st.caption(n)
    if tile is not None:
        per = {}
        for label in ("naive", "shared-only", "register-only"):
            k = named.get(label)
            if k is not None and not isinstance(k, list):
                try:
                    per[label] = L.tile_trace(op, k, target)[2]
                except Exception:   # noqa: BLE001 - already reported above
                    pass
        if "naive" in per:
            g = {k: _num(L.global_per_output(t)) for k, t in per.items()}
            n = L.passes(per["naive"])
            line = (passes_line(n, g["naive"], g["shared-only"], g["register-only"]) if len(g) == 3
                    else f"over {n} passes: " + ", ".join(f"{k} {v}" for k, v in g.items()))
            st.markdown(f"`{line}` · current knobs {_num(L.global_per_output(tile))} — global reads of the "
                        "inputs per output element by thread 0 of block 0 on the drawable tile (naive; the current "
                        "knobs with operands cached in shared memory, and in registers).")
        try:
            counts = L.full_counts(op, tuple(shape.items()), kn, target)
        except Exception:           # noqa: BLE001 - reported above
            counts = None
        cc = st.columns([3, 2])
        with cc[0]:
            lvl = st.segmented_control("Reuse map: reads from", [*LEVELS, "any level"], default="global",
                                       key="lab_reuse_level", required=True)
            heat = viz.reuse_heatmap(tile, None if lvl == "any level" else lvl)
            st.plotly_chart(heat, theme=None, key="lab_reuse", config={"displaylogo": False})
            _download(heat, f"{op}-{target}-reuse", "lab_dl_reuse")
        with cc[1]:
            if counts is not None:
                st.markdown("**Per tensor, full size** (element reads / writes)")
                st.dataframe(pd.DataFrame({t: {f"{lv} {kind}": v[kind] for lv, v in lvs.items()
                                               for kind in ("read", "write")}
                                           for t, lvs in counts.per_tensor.items()}).T, width="stretch")
                if counts.ncu:
                    st.markdown("**Nsight Compute, predicted**")
                    st.dataframe({"metric": list(counts.ncu), "predicted": list(counts.ncu.values())},
                                 hide_index=True, width="stretch")
                for e in counts.effects:
                    st.caption(f"Modelled: {e}")

    # ------------------------------------------------------------ the real kernel
    st.subheader("The real kernel")
    runs = ss.setdefault("lab_runs", {})
    rkey = (op, tuple(shape.items()), kn, target)
    if why_not:
        st.button("Compile & run", disabled=True, help=why_not, key="lab_run_disabled")
        st.caption(f"This machine cannot time CUDA kernels: {why_not}")
        rec = L.recorded_runs(op)
        if rec.empty:
            st.info("No recorded GPU runs yet for this operator (data/ holds none).")
        else:
            st.markdown(f"**Recorded on {', '.join(sorted(set(map(str, rec['device']))))}**"
                        f" (dates: {', '.join(sorted(set(map(str, rec['date']))))})")
            mine = rec[rec["preset"] == preset_name] if "preset" in rec.columns else rec
            st.dataframe(mine if not mine.empty else rec, hide_index=True, width="stretch")
    elif st.button("Compile & run", type="primary", key="lab_run"):
        with st.status("Compiling, verifying and timing…", expanded=True) as status:
            try:
                got = {}
                for label, k, pname in (("current", kn, preset_name if not edited else ""),
                                        ("baseline", K.preset(op, target, "baseline", shape), "baseline"),
                                        ("naive", naive, "naive")):
                    st.write(f"{label}: compiling and timing `{K.knobs_text(k)}`")
                    got[label] = L.run(op, tuple(shape.items()), k, target, pname)
                runs[rkey] = got
                status.update(label="Done", state="complete", expanded=False)
            except Exception as e:  # noqa: BLE001
                status.update(label="The run failed", state="error")
                for s in L.sentences(e):
                    st.error(s)
    got = runs.get(rkey)
    if got:
        r = got["current"]
        m = st.columns(7)
        m[0].metric("Verified", "ok" if r.ok else "FAILED", f"rel. err {r.rel_err:.1e}", delta_color="off")
        m[1].metric("Median", f"{r.median_ms:.4g} ms", f"IQR {r.spread_ms:.2g} ms", delta_color="off")
        m[2].metric("GFLOP/s", f"{r.gflops:,.1f}")
        m[3].metric("GB/s (min. bytes)", f"{r.gbps:,.1f}")
        m[4].metric("vs baseline", f"{got['baseline'].median_ms / r.median_ms:.2f}x")
        m[5].metric("vs naive", f"{got['naive'].median_ms / r.median_ms:.2f}x")
        m[6].metric(f"vs {r.ref or 'reference'}", f"{r.vs_ref:.2f}x" if r.vs_ref else "n/a",
                    help="reference time / kernel time: above 1 the kernel is faster")
        st.caption(f"{r.device} · {r.versions} · compiled in {r.compile_s:.2f} s · {r.date} · recorded in the "
                   "results store")

    # ------------------------------------------------------------ code
    st.subheader("Code")
    asm = "cuda" if target == "cuda" else "llvm"
    names = ["TensorIR", "CUDA C" if target == "cuda" else "LLVM assembly", "s_tir snippet", "Why each step"]
    tabs = st.tabs(names, key="lab_code_tabs", on_change="rerun")
    sk = (op, tuple(shape.items()), kn, target)
    for tab, what in zip(tabs, ("tir", asm, "snippet", "steps")):
        with tab:
            if tab.open is False:
                continue
            try:
                if what in ("snippet", "steps"):
                    text, lines = L.snippet(*sk)
                    if what == "snippet":
                        st.code(text, language="python")
                    else:
                        st.markdown("\n".join(f"{i}. {s}" for i, s in enumerate(lines, 1)))
                else:
                    st.code(L.code(*sk, what), language={"tir": "python", "cuda": "cpp", "llvm": "nasm"}[what],
                            height=420)
            except Exception as e:  # noqa: BLE001
                for s in L.sentences(e):
                    st.error(s)

    # ------------------------------------------------------------ roofline
    st.subheader("Roofline")
    (clabel, cval), (mlabel, mval) = L.ceilings(target)
    compute, memory = [viz.Ceiling(clabel, cval)], [viz.Ceiling(mlabel, mval)]
    pts = []
    for label, k in (("current", kn), ("naive", naive)):
        try:
            c = L.full_counts(op, tuple(shape.items()), k, target)
        except Exception:           # noqa: BLE001 - reported in the counts section
            continue
        ai = c.intensity()["global"]
        pts.append(viz.Point(label, ai, viz.attainable(ai, compute, memory), "predicted"))
        if got and label in got:
            pts.append(viz.Point(label, ai, got[label].gflops, "measured"))
    if target == "cuda":
        rec = L.recorded_runs(op)
        if not rec.empty and {"preset", "shape", "gflops"} <= set(rec.columns):
            for _, row in rec[rec["shape"] == L.shape_text(shape)].iterrows():
                try:
                    c = L.full_counts(op, tuple(shape.items()), K.preset(op, target, row["preset"], shape), target)
                    pts.append(viz.Point(f"{row['preset']} ({row['device']})", c.intensity()["global"],
                                         float(row["gflops"]), "measured"))
                except Exception:   # noqa: BLE001 - a tuning candidate is not a preset: skip it
                    continue
    roof = viz.roofline(pts, compute, memory, title=f"{OPS[op].title} on {target}: global-memory roofline")
    st.plotly_chart(roof, theme=None, key="lab_roof", config={"displaylogo": False})
    st.caption("Arithmetic intensity = FLOPs / bytes moved to and from global memory, from the exact counts. "
               "Predicted points sit on the roof; measured points appear once the kernel has been timed.")
    _download(roof, f"{op}-{target}-roofline", "lab_dl_roof")
    ss.setdefault("lab_timing", {})["whole page"] = time.perf_counter() - _t0
