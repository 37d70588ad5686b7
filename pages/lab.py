"""The Lab: pick an operator, shape, target and knobs; watch the drawable tile, read the counts, run the kernel.

A layout script: widgets in, kernels/ (through the cached calls in pages/_parts/lab.py) and viz/ out. Each
section runs guarded, so a failure shows its sentence in place and the rest of the page still renders.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import viz
from kernels import build
from kernels import knobs as K
from kernels.ops import OPS
from kernels.records import LEVELS, passes_line, totals
from kernels.sass import NCU
from pages._parts import lab as L

ss = st.session_state
_t0 = time.perf_counter()


@dataclass
class View:
    """What the visitor picked: every section reads this."""
    op: str
    target: str
    shape: dict
    preset: str
    knobs: object               # the last valid knobs
    edited: bool
    why_not: str | None         # why the target cannot run here, or None

    @property
    def key(self) -> tuple:
        return (self.op, tuple(self.shape.items()), self.knobs, self.target)


def guarded(fn, *args):
    try:
        return fn(*args)
    except Exception as e:      # noqa: BLE001 - a sentence in place of the section, never a traceback
        for s in L.sentences(e):
            st.error(s, icon=":material/error:")
        return None


def download(fig, name: str, key: str) -> None:
    st.download_button("Download as HTML", data=lambda: viz.to_html(fig, title=f"Kernel Lab: {name}"),
                       file_name=f"{name}.html", mime="text/html", key=key, on_click="ignore",
                       icon=":material/download:")


def chart(fig, key: str, **kw) -> None:
    st.plotly_chart(fig, theme=None, key=key, config={"displaylogo": False}, **kw)


ASKED: set = set()                  # the full-size counts this run asked for


def counts_of(v: View, knobs, wait: float, machine: bool = False):
    """Full-size counts of `knobs` for the view (with `machine`, the emulated SASS's too); raises L.Pending past
    `wait` seconds."""
    ASKED.add((v.op, v.key[1], knobs, v.target, machine))
    return L.full_counts(v.op, v.key[1], knobs, v.target, wait, machine)


@st.fragment(run_every=2.0)
def poll_counts(keys: set) -> None:
    """While full-size counts run in the background, check every 2 s and redraw the page when done."""
    if not L.counting(keys):
        st.rerun()
    st.caption(":material/hourglass_top: Counting at full size in the background; the page redraws when done.")


@st.fragment(run_every=1.0)
def poll_comparisons(jobs: list, done: int) -> None:
    """While the comparison kernels time in the background, a progress bar; the page redraws when one lands."""
    if sum(j.done() for j in jobs) != done:
        st.rerun()
    st.progress(done / len(jobs), text=f"Timing the comparisons in the background: {done} of {len(jobs)} done")


def num(x: float):
    return int(x) if float(x).is_integer() else round(float(x), 2)


# ---------------------------------------------------------------- controls
def target_caption(op: str, t: str) -> str:
    if L.unsupported(op, t):
        return f"not for {op}"
    if t == "fpga":
        return "simulated accelerator"
    return "no GPU here: simulated, source shown" if build.target_available(t) else "runs here"


def controls() -> tuple[str, str, dict, str]:
    top = st.columns([1.2, 1.5, 1.5, 0.9])
    op = top[0].selectbox("Operator", list(OPS), format_func=lambda o: OPS[o].title, key="lab_op")
    size = top[1].segmented_control("Shape", L.SIZES, default="speed test", key="lab_size", required=True)
    target = top[2].radio("Target", L.TARGETS, key="lab_target", horizontal=True,
                          captions=[target_caption(op, t) for t in L.TARGETS])
    preset = top[3].selectbox("Preset", K.PRESET_NAMES, index=K.PRESET_NAMES.index("seed"), key="lab_preset")
    st.caption(f"**{OPS[op].title}**: `{OPS[op].math}`")
    shape = dict(OPS[op].sizes[size if size in OPS[op].sizes else "speed test"])
    if size == "custom":
        text = st.text_input("Custom shape", value=L.shape_text(shape), key=f"lab_custom_{op}",
                             help=f"{op} takes {', '.join(OPS[op].dims)} as name=value, comma separated.")
        try:
            shape = K.parse_shape(op, text)
            ss[f"lab_shape_ok_{op}"] = shape
        except K.KnobError as e:
            for s in e.problems:
                st.error(s)
            shape = ss.get(f"lab_shape_ok_{op}", shape)
            st.caption(f"Using the last valid shape, `{L.shape_text(shape)}`.")
    return op, target, shape, preset


def knob_panel(op: str, target: str, shape: dict, preset: str):
    """Widgets generated from the knob dataclass; validation sentences under the knob they name.
    Returns (knobs as set, the preset's knobs, problems)."""
    base = K.preset(op, target, preset, shape)
    fs = L.knob_fields(op, target)
    wkey = {f.name: f"lab_k_{op}_{target}_{f.name}" for f in fs}
    src = (op, target, tuple(shape.items()), preset)
    if ss.get("lab_src") != src:              # a new operator, target, shape or preset loads its knobs
        for f in fs:
            ss[wkey[f.name]] = getattr(base, f.name)
        ss["lab_src"] = src
    st.subheader("Knobs")
    values, slots = {}, {}
    for f in fs:
        meta, key, cur = f.metadata, wkey[f.name], ss[wkey[f.name]]
        choices = meta.get("choices")
        if choices == (False, True):
            values[f.name] = st.toggle(f.name, key=key, help=meta["help"])
        elif choices:
            if cur not in choices:
                ss[key] = choices[0]
            values[f.name] = st.selectbox(f.name, choices, key=key, help=meta["help"])
        elif extent := L.axis_of(base, f.name, shape):
            step = meta.get("lo", 1) if f.name.startswith("tile") else 1     # fpga: multiples of the core's 16
            values[f.name] = st.select_slider(f.name, L.int_options(extent, cur, step), key=key, help=meta["help"])
        else:
            values[f.name] = st.number_input(f.name, min_value=meta.get("lo", 1), step=1, key=key, help=meta["help"])
        slots[f.name] = st.empty()
    general = st.container()
    knobs = K.knob_class(op, target)(**values)
    problems = K.validate(op, target, knobs, shape)
    for s in problems:
        name = L.field_for(s, list(values))
        (slots[name] if name else general).error(s, icon=":material/block:")
    return knobs, base, problems


# ---------------------------------------------------------------- the drawable tile
def tile_section(v: View):
    st.subheader("The drawable tile")
    if L.traffic is None:
        st.error(L.TRAFFIC_MISSING)
        return None
    machine = v.target == "cuda" and st.segmented_control(
        "Replay", ["TensorIR: what the schedule asks for", "SASS: what the machine executes"],
        default="TensorIR: what the schedule asks for", key="lab_replay", required=True,
        help="The SASS replay emulates the compiled kernel of the drawable tile lane by lane: registers nvcc "
             "kept, loads it merged, and local memory (spills) as a level of its own.").startswith("SASS")
    try:
        tshape, tknobs, tile = L.machine_tile(v.op, v.knobs, v.shape) if machine else \
            L.tile_trace(v.op, v.knobs, v.target)
    except Exception as e:      # noqa: BLE001
        for s in L.sentences(e):
            st.error(f"The {'machine' if machine else 'simulator'} could not trace this schedule: {s}")
        return None
    if v.target == "fpga":                  # one instruction stream: no blocks or threads to pick
        st.caption(f"Tile `{L.shape_text(tshape)}`, knobs scaled with it: `{K.knobs_text(tknobs)}`. The accelerator "
                   f"runs one instruction stream: {tile.phases} instructions (DMA loads into the on-chip buffers, "
                   f"GEMM-core operations on them, DMA stores of the accumulator), {len(tile.records):,} element "
                   "accesses, replayed by the simulator. Press play or drag the slider.")
        fig = L.tile_figure(v.op, v.knobs, v.target, None, None)
        chart(fig, "lab_tile_chart")
        download(fig, f"{v.op}-{v.target}-tile", "lab_dl_tile")
        return tshape, tile
    c = st.columns([1, 1, 3])
    blocks, threads = ["all"] + list(range(tile.blocks)), ["all"] + list(range(tile.threads))
    for k, opts in (("lab_block", blocks), ("lab_thread", threads)):
        if ss.get(k) not in opts:
            ss[k] = "all"
    blk = c[0].selectbox("Block", blocks, key="lab_block")
    thr = c[1].selectbox("Thread", threads, key="lab_thread")
    c[2].caption(f"Tile `{L.shape_text(tshape)}`, knobs scaled with it: `{K.knobs_text(tknobs)}`. "
                 f"{tile.blocks} block(s) x {tile.threads} thread(s); {len(tile.records):,} accesses. "
                 "Press play or drag the slider; click an output cell to follow its thread.")

    def pick():
        pts = getattr(getattr(ss.get("lab_tile_chart"), "selection", None), "points", None) or []
        got = pts and viz.owner_at(tile, int(round(pts[0]["y"])), int(round(pts[0]["x"])))
        if got:
            ss["lab_block"], ss["lab_thread"] = got

    b_, t_ = None if blk == "all" else blk, None if thr == "all" else thr
    fig = L.machine_figure(v.op, v.knobs, v.shape, b_, t_) if machine else \
        L.tile_figure(v.op, v.knobs, v.target, b_, t_)
    if machine:
        st.caption("Each access is one lane of one SASS instruction, its address mapped back to the tensor "
                   "element; shared, register and local accesses show the element whose value they hold."
                   + (" **Local memory appears**: nvcc spilled this kernel's registers." if any(
                       r.level == "local" for r in tile.records) else ""))
    chart(fig, "lab_tile_chart", on_select=pick, selection_mode="points")
    download(fig, f"{v.op}-{v.target}-tile", "lab_dl_tile")
    return tshape, tile


# ---------------------------------------------------------------- counts
def counts_section(v: View, drawn) -> None:
    st.subheader("Reads at each level")
    if L.traffic is None:
        st.error(L.TRAFFIC_MISSING)
        return
    naive = K.preset(v.op, v.target, "naive", v.shape)
    named = {"current": v.knobs, "naive": naive, **L.variants(v.op, v.target, v.knobs, v.shape)}
    tile_sets, full_sets, traces, notes = {}, {}, {}, []
    deadline = time.perf_counter() + 1.0      # the page waits this long for full-size counts, then moves on
    headline = st.empty()                     # the current kernel's counts, drawn before the comparisons
    for label, k in named.items():
        if isinstance(k, list):
            notes.append(f"**{label}** is not a legal kernel here: {' '.join(k)}")
            continue
        try:
            traces[label] = L.tile_trace(v.op, k, v.target)[2]
            tile_sets[label] = totals(traces[label].records)
        except Exception as e:  # noqa: BLE001
            notes.append(f"**{label}** (drawable tile): {' '.join(L.sentences(e))}")
        try:
            full_sets[label] = counts_of(v, k, deadline - time.perf_counter()).level_totals("read")
        except Exception as e:  # noqa: BLE001
            notes.append(f"**{label}** (full size): {' '.join(L.sentences(e))}")
        if label == "current":
            lines = [f"**Current kernel, {name}:** {viz.counter_text(sets['current'], L.words(v.target))}"
                     for name, sets in (("drawable tile", tile_sets), ("full size", full_sets)) if "current" in sets]
            headline.markdown("  \n".join(lines) or "No counts for the current kernel.")
            ss["lab_timing"] = {"tile and counts": time.perf_counter() - _t0}
    if tile_sets or full_sets:
        tname = f"drawable tile ({L.shape_text(drawn[0])})" if drawn else "drawable tile"
        panels = {tname: tile_sets, f"full size ({L.shape_text(v.shape)})": full_sets}
        bars = viz.level_bars({k: s for k, s in panels.items() if s}, level_names=L.level_names(v.target),
                              title="Element reads per level (simulated): current knobs against naive"
                              if v.target == "fpga" else
                              "Element reads per level: current knobs against naive and the cache variants")
        chart(bars, "lab_bars")
        download(bars, f"{v.op}-{v.target}-counts", "lab_dl_bars")
    for n in notes:
        st.caption(n)
    if v.target != "fpga" and "naive" in traces and "current" in traces:    # the seed's per-thread line (GPU/CPU)
        g = {k: num(L.global_per_output(traces[k])) for k in ("naive", "shared-only", "register-only") if k in traces}
        n = L.passes(traces["naive"])
        line = (passes_line(n, g["naive"], g["shared-only"], g["register-only"]) if len(g) == 3
                else f"over {n} passes: " + ", ".join(f"{k} {x}" for k, x in g.items()))
        st.markdown(f"`{line}` · current knobs {num(L.global_per_output(traces['current']))} — global reads of "
                    "the inputs per output element by thread 0 of block 0 on the drawable tile (naive; the current "
                    "knobs with the operands cached in shared memory, and in registers).")
    if drawn:
        lvl = st.segmented_control("Reuse map: reads from", [*LEVELS, "any level"], default="global",
                                   key="lab_reuse_level", required=True,
                                   format_func=lambda x: L.level_name(v.target, x))
        heat = viz.reuse_heatmap(drawn[1], None if lvl == "any level" else lvl,
                                 level_names=L.level_names(v.target))
        chart(heat, "lab_reuse")
        download(heat, f"{v.op}-{v.target}-reuse", "lab_dl_reuse")
    try:
        counts = counts_of(v, v.knobs, 0)
    except Exception:           # noqa: BLE001 - reported above
        return
    table = pd.DataFrame({t: {f"{L.level_name(v.target, lv)} {kind}": x[kind] for lv, x in lvs.items()
                              for kind in ("read", "write")}
                          for t, lvs in counts.per_tensor.items()}).T.fillna(0)     # no entry: none at that level
    table = table[[c for lv in LEVELS for kind in ("read", "write")
                   if (c := f"{L.level_name(v.target, lv)} {kind}") in table.columns]]
    st.markdown("**Per tensor, full size** (element reads and writes at each level"
                + (", simulated)" if v.target == "fpga" else ")"))
    st.dataframe(table, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="localized") for c in table})
    st.caption("What the schedule asks for: the TensorIR's reads and writes. The compiler changes them; the "
               "machine's view below counts what the compiled kernel executes.")
    if v.target == "cuda":
        machine_section(v)
    for note in counts.differences if v.target == "fpga" else ():
        st.caption(f"Simulated: {note}")


def machine_section(v: View) -> None:
    """The compiled SASS, emulated at full size: Nsight Compute's counts and why they differ from the TensorIR."""
    st.markdown("**What the machine executes** (the sm_90 SASS of this kernel, emulated warp by warp)")
    try:
        c = counts_of(v, v.knobs, 1.5, machine=True)
    except L.Pending:
        st.progress(L.PROGRESS.get((*v.key, True), 0.0), text="Emulating the SASS at full size in the background")
        return
    if "error" in c.machine:
        st.warning(c.machine["error"], icon=":material/memory:")
        return
    inst = c.machine["instructions"]
    level = {"global_ld": "global", "global_st": "global", "ldgsts": "global → shared", "shared_ld": "shared",
             "shared_st": "shared", "local_ld": "local", "local_st": "local"}
    rows = [{"metric": m, "level": level.get(k, "global"), "count": c.ncu[m]} for k, m in NCU.items()
            if m in c.ncu and (c.ncu[m] or level.get(k) != "local")]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="content",
                 column_config={"count": st.column_config.NumberColumn(format="localized")})
    if inst.get("local_ld") or inst.get("local_st"):
        st.warning(f"This kernel uses **local memory**: {inst.get('local_ld', 0):,} loads and "
                   f"{inst.get('local_st', 0):,} stores per warp, a level the TensorIR does not have.",
                   icon=":material/memory:")
    for d in c.differences:
        st.caption(f"Why the SASS differs: {d}")
    st.caption(f"SASS {c.machine['sass_hash'][:12]} (pinned NVRTC, the cubin a GPU loads), emulated in "
               f"{c.machine['seconds']:.2f} s. The Hardware check page shows how these counts compare with "
               "Nsight Compute on kernels nobody had measured.")


# ---------------------------------------------------------------- fpga: the accelerator and the simulated time
def accel_card() -> None:
    """The accelerator the fpga target simulates (kernels/fpga/accel.py), as a card under the knobs."""
    d = L.fpga.DEFAULT.describe()
    with st.container(border=True):
        st.markdown(f"**:material/developer_board: {d.pop('name')}**")
        st.markdown("  \n".join(f"{k}: {x}" for k, x in d.items()))
        st.caption("VTA's published Pynq configuration, adapted to float32 (kernels/fpga/accel.py gives the "
                   "source of each number). A behavioural model, simulated: no FPGA runs here.")


def time_section(v: View) -> None:
    """fpga only: the simulated time and where it goes, from the same simulated run as the counts."""
    st.subheader("Simulated time")
    try:
        counts = counts_of(v, v.knobs, 0)
    except L.Pending:
        st.caption(":material/hourglass_top: The simulator is still running this schedule at full size; the "
                   "simulated time appears here when it is done.")
        return
    except Exception as e:      # noqa: BLE001 - the sentence (e.g. too many instructions to simulate)
        for s in L.sentences(e):
            st.error(f"No simulated time: {s}", icon=":material/error:")
        return
    tb, rep = counts.timing, counts.report
    off = dict(delta_color="off", delta_arrow="off")
    m = st.columns(4)
    m[0].metric("Simulated time", f"{tb['ms']:.3g} ms", f"{tb['cycles']:,} cycles at {tb['clock_mhz']:g} MHz", **off,
                help="Cycles of the load / compute / store pipeline model divided by the clock: simulated, never "
                     "measured.")
    m[1].metric("Bound", tb["bound"], f"fill {tb['fill_ms'] / tb['ms']:.0%} of the time" if tb["ms"] else None, **off,
                help="The larger of the compute bound (MACs / core MACs per cycle) and the memory bound (DRAM bytes / "
                     "DRAM bytes per cycle); fill = the time the busier unit waited.")
    m[2].metric("Overlap hidden", f"{tb['overlap_ms']:.3g} ms",
                f"{tb['overlap_ms'] / tb['serial_ms']:.0%} of serial" if tb["serial_ms"] else None, **off,
                help="Busy time of the three queues end to end, minus the simulated time: what the pipeline "
                     "(double buffering) overlapped.")
    m[3].metric("GEMM-core use", f"{rep.get('core_utilisation', 0):.0%}", f"{rep.get('core_ops', 0):,} core ops",
                **off, help="MACs the operator needs / MACs the issued core operations could do.")
    fig = viz.time_breakdown(tb, title=f"Simulated time of {OPS[v.op].title} at {L.shape_text(v.shape)}: "
                                       "load / compute / store and their overlap")
    chart(fig, "lab_time")
    download(fig, f"{v.op}-fpga-time", "lab_dl_time")
    rows = [("load (DMA, DRAM -> buffers)", tb["load_ms"]), ("compute (GEMM core)", tb["compute_ms"]),
            ("store (DMA, accumulator -> DRAM)", tb["store_ms"]),
            ("serial: the three one after another", tb["serial_ms"]),
            ("overlap hidden by the pipeline", tb["overlap_ms"]), ("simulated time", tb["ms"]),
            ("compute bound", tb["compute_bound_ms"]), ("memory bound", tb["memory_bound_ms"]),
            ("fill (the busier unit waiting)", tb["fill_ms"])]
    cpm = tb["clock_mhz"] * 1e3
    c = st.columns(2)
    c[0].dataframe(pd.DataFrame({"simulated": [r[0] for r in rows], "ms": [r[1] for r in rows],
                                 "cycles": [round(r[1] * cpm) for r in rows]}), hide_index=True, width="stretch",
                   column_config={"ms": st.column_config.NumberColumn(format="%.4g"),
                                  "cycles": st.column_config.NumberColumn(format="localized")})
    buf = rep.get("buffer_floats", {})
    by = rep.get("bytes_per_buffer", {})
    c[1].dataframe(pd.DataFrame([{"buffer": b, "bytes read": by.get(b, {}).get("read"),
                                  "bytes written": by.get(b, {}).get("write"),
                                  "floats used": buf.get(b, {}).get("used"),
                                  "capacity (floats)": buf.get(b, {}).get("capacity")} for b in by]),
                   hide_index=True, width="stretch",
                   column_config={k: st.column_config.NumberColumn(format="localized")
                                  for k in ("bytes read", "bytes written", "floats used", "capacity (floats)")})
    ins = rep.get("instructions", {})
    st.caption("Simulated, not measured: the lowered kernel's instructions ("
               + ", ".join(f"{n:,} {k}" for k, n in ins.items())
               + ") on the cycle model of kernels/fpga/pipeline.py: three in-order queues (load, compute, store), "
                 "one DRAM port shared by loads and stores, one core operation per cycle; time = cycles / clock. "
                 f"Result checked against float64: rel. error {rep.get('rel_err', float('nan')):.1e} "
                 f"({'ok' if rep.get('ok') else 'FAILED'}).")


# ---------------------------------------------------------------- the real kernel
def device_panel(v: View) -> str | None:
    """The device the real kernel runs on: this machine, or a server of a TVM RPC tracker's pool. Returns the
    pool as HOST:PORT:KEY, or None for this machine."""
    if v.target == "fpga":
        return None
    with st.expander("Device: " + ("a remote server (RPC tracker)" if ss.get("lab_remote") else "this machine"),
                     icon=":material/lan:"):
        remote_on = st.toggle("Run on a server of a TVM RPC tracker", key="lab_remote",
                              help="Start one: python -m tvm.exec.rpc_tracker --port 9190, then on the GPU machine "
                                   "python -m kernels.rpc_server --tracker HOST:9190 --key KEY")
        c = st.columns([2, 1])
        tracker = c[0].text_input("Tracker (HOST:PORT)", value="127.0.0.1:9190", key="lab_tracker")
        key = c[1].text_input("Key", value="h200", key="lab_rpc_key")
        if not remote_on:
            return None
        try:
            from kernels import remote
            pool = remote.parse(f"{tracker}:{key}")
            pool_rows = L.tracker_servers(pool.host, pool.port)
        except Exception as e:  # noqa: BLE001 - a tracker that is down, a malformed address: its sentence
            for s_ in L.sentences(e):
                st.error(s_)
            return None
        st.dataframe(pd.DataFrame(pool_rows), hide_index=True, width="content")
        if not any(r["key"] == key and r["total"] for r in pool_rows):
            st.warning(f"The tracker has no server under key '{key}'; start one, or pick a key it lists.")
        return f"{tracker}:{key}"


def kernel_section(v: View) -> dict | None:
    st.subheader("The real kernel")
    runs = ss.setdefault("lab_runs", {})
    pool = guarded(device_panel, v)
    if pool:
        if st.button("Compile here, run on the server", type="primary", key="lab_run_remote"):
            with st.status("Compiling here, verifying and timing on the server…", expanded=True) as status:
                try:
                    r = L.run_remote(v.op, v.key[1], v.knobs, v.target, pool)
                    runs[(*v.key, pool)] = r
                    status.update(label="Verified and timed on the server", state="complete", expanded=False)
                except Exception as e:  # noqa: BLE001
                    status.update(label="The run failed", state="error")
                    for s_ in L.sentences(e):
                        st.error(s_)
        r = runs.get((*v.key, pool))
        if r is not None:
            m = st.columns(4)
            m[0].metric("Verified", "ok" if r.ok else "FAILED", f"rel. err {r.rel_err:.1e}", delta_color="off")
            m[1].metric("Median", f"{r.median_ms:.4g} ms", f"IQR {r.spread_ms:.2g} ms", delta_color="off")
            m[2].metric("GFLOP/s", f"{r.gflops:,.1f}")
            m[3].metric(f"vs {r.ref or 'reference'}", f"{r.vs_ref:.2f}x" if r.vs_ref else "n/a",
                        help="reference time / kernel time, both timed on the server")
            st.caption(f"{r.device} · {r.versions} · {r.date} · recorded in the results store" +
                       (f" · kernel timed by {r.timer}" if r.timer else "") + (f" · {r.note}" if r.note else ""))
        return None
    if v.why_not:
        st.button("Compile & run", disabled=True, help=v.why_not, key="lab_run_disabled")
        st.caption(f"This machine cannot time CUDA kernels: {v.why_not}")
        rec = L.recorded_runs(v.op)
        if rec.empty:
            st.info("No recorded GPU runs yet for this operator (data/ holds none).")
        else:
            st.markdown(f"**Recorded on {', '.join(sorted(set(map(str, rec['device']))))}** "
                        f"(dates: {', '.join(sorted(set(str(d)[:10] for d in rec['date'])))})")
            mine = rec[rec["preset"] == v.preset] if "preset" in rec.columns else rec
            first = [c for c in ("device", "date", "shape", "preset", "median_ms", "gflops", "gbps", "ok", "rel_err",
                                 "reference", "ref_ms", "knobs", "file") if c in rec.columns]
            shown = mine if not mine.empty else rec
            st.caption(f"Recorded runs of the `{v.preset}` preset, every shape (the files under data/ hold them all)."
                       if not mine.empty else "Every recorded run of this operator (none of this preset).")
            st.dataframe(shown[first + [c for c in shown.columns if c not in first]], hide_index=True,
                         width="stretch")
        return None
    sim = v.target == "fpga"
    if st.button("Compile & run", type="primary", key="lab_run",
                 help="Run this schedule in the accelerator simulator, check it against the float64 reference and "
                      "take its simulated time (cycles / clock); then the baseline and naive presets (all cached)."
                 if sim else
                      "Compile this schedule, check it against the float64 reference and time it; the baseline and "
                      "naive presets are timed after it in the background (or taken from the results store when "
                      "this device measured them already)."):
        with st.status("Simulating and verifying…" if sim else "Compiling, verifying and timing…",
                       expanded=True) as status:
            try:
                st.write(f"current: `{K.knobs_text(v.knobs)}`")
                if sim:                 # the full-size count job runs the same simulation: wait for it, once
                    counts_of(v, v.knobs, 600)
                runs[v.key] = {"current": L.run(v.op, v.key[1], v.knobs, v.target, "" if v.edited else v.preset)}
                status.update(label="Simulated and verified" if sim else "Compiled, verified and timed",
                              state="complete", expanded=False)
            except Exception as e:  # noqa: BLE001
                status.update(label="The run failed", state="error")
                for s in L.sentences(e):
                    st.error(s)
    got = runs.get(v.key)
    if got:
        r = got["current"]
        m = st.columns(4) + st.columns(4)[:3]
        sim_ = " (simulated)" if sim else ""

        others = {label: L.comparison(v.op, v.key[1], K.preset(v.op, v.target, label, v.shape), v.target, label)
                  for label in ("baseline", "naive")}

        def speedup(label):
            job = others[label]
            if not job.done():
                return "timing…"
            if job.exception() is not None:
                got[f"{label}_why"] = " ".join(L.sentences(job.exception()))
                return "n/a"
            return f"{job.result() / r.median_ms:.2f}x"

        m[0].metric("Verified", "ok" if r.ok else "FAILED", f"rel. err {r.rel_err:.1e}", delta_color="off")
        if sim:
            m[1].metric("Simulated time", f"{r.median_ms:.4g} ms", "cycles / clock, no hardware", delta_color="off",
                        delta_arrow="off")
        else:
            m[1].metric("Median", f"{r.median_ms:.4g} ms", f"IQR {r.spread_ms:.2g} ms", delta_color="off")
        m[2].metric(f"GFLOP/s{sim_}", f"{r.gflops:,.1f}" if r.gflops >= 1 else f"{r.gflops:.3g}")
        m[3].metric(f"GB/s{sim_}", f"{r.gbps:,.1f}" if r.gbps >= 1 else f"{r.gbps:.3g}",
                    help="minimum bytes (each input read once, the output written once) per second")
        for i, label in ((4, "baseline"), (5, "naive")):
            m[i].metric(f"vs {label}", speedup(label), help=got.get(f"{label}_why"))
        done = sum(job.done() for job in others.values())
        if done < len(others):
            poll_comparisons(list(others.values()), done)
        if sim:
            peak = L.fpga_ceilings()[0][1]
            m[6].metric("of the core's peak", f"{r.gflops / peak:.0%}",
                        help="simulated GFLOP/s / the modelled GEMM core's peak (MACs per cycle x 2 x clock)")
            st.caption(f"{r.device} · {r.ref} · {r.versions} · {r.date} · recorded in the results store")
        else:
            m[6].metric(f"vs {r.ref or 'reference'}", f"{r.vs_ref:.2f}x" if r.vs_ref else "n/a",
                        help="reference time / kernel time: above 1 the kernel is faster")
            st.caption(f"{r.device} · {r.versions} · compiled in {r.compile_s:.2f} s · {r.date} · "
                       "recorded in the results store" + (f" · kernel timed by {r.timer}" if r.timer else ""))
    return got


# ---------------------------------------------------------------- tune
def tune_section(v: View) -> None:
    st.subheader("Tune")
    if v.why_not or v.target == "fpga":
        st.caption("The tuner measures candidates on the device: "
                   + (v.why_not or "the fpga target is simulated, so there is nothing to measure.")
                   + " `python -m kernels tune ... --rpc HOST:PORT:KEY` tunes on a remote GPU.")
        return
    c = st.columns([2, 1])
    trials = c[0].select_slider("Trial budget", [8, 16, 32, 64, 128], value=16, key="lab_tune_trials",
                                help="How many candidates to build, verify and time. A cost model built on the "
                                     "simulator's counts of each candidate picks which, and learns as times come in.")
    if c[1].button("Tune this shape", key="lab_tune"):
        L.start_tune(v.op, v.key[1], v.target, trials)
    job = L.TUNES.get((v.op, v.key[1], v.target, trials))
    if job is not None:
        tune_progress(job, trials, v)


@st.fragment(run_every=1.0)
def tune_progress(job: dict, trials: int, v: View) -> None:
    hist = job["history"]
    if job["error"]:
        st.error(job["error"])
        return
    if not job["done"]:
        st.progress(len(hist) / trials, text=f"Tuning: {len(hist)} of {trials} trials measured")
    if hist:
        chart(viz.best_so_far(hist, title=f"Best so far over the trials ({OPS[v.op].title}, {L.shape_text(v.shape)})"),
              "lab_tune_plot")
    r = job["result"]
    if r is not None:
        st.markdown(f"**Winner:** `{r.best_knobs}`: {r.median_ms:.4g} ms"
                    + (f", {r.vs_ref:.2f}x {r.ref}" if r.vs_ref else "") + f" ({r.trials} trials in {r.search_s:.0f} s,"
                    " every trial in the results store" + (f"; timed by {r.timer}" if r.timer else "") + ")")
        st.button("Apply the winner's knobs", key="lab_tune_apply", on_click=apply_knobs,
                  args=(v.op, v.target, r.best_knobs))


def apply_knobs(op: str, target: str, text: str) -> None:
    """Set the knob widgets to a knob text (the tuner's winner): the next run draws it."""
    k = K.parse_knobs(op, target, text, K.knob_class(op, target)())
    for name in K.fields_of(k):
        ss[f"lab_k_{op}_{target}_{name}"] = getattr(k, name)


# ---------------------------------------------------------------- code
def code_section(v: View) -> None:
    st.subheader("Code")
    asm = {"cuda": "cuda", "fpga": "lowered"}.get(v.target, "llvm")
    names = ["TensorIR", {"cuda": "CUDA C", "fpga": "Lowered TensorIR (what the simulator runs)"}.get(
        v.target, "LLVM assembly"), "s_tir snippet", "Why each step"] + (["SASS"] if v.target == "cuda" else [])
    whats = ("tir", asm, "snippet", "steps", "sass")
    for tab, what in zip(st.tabs(names, key="lab_code_tabs", on_change="rerun"), whats):
        with tab:
            if tab.open is False:               # lazy: only the open tab compiles or prints anything
                continue
            if what == "sass":
                sass_tab(v)
                continue
            if what in ("snippet", "steps"):
                text, lines = L.snippet(*v.key)
                if what == "snippet":
                    st.code(text, language="python")
                else:
                    st.markdown("\n".join(f"{i}. {s}" for i, s in enumerate(lines, 1)))
                continue
            text = L.code(*v.key, what)
            lang = {"tir": "python", "cuda": "cpp", "llvm": "nasm", "lowered": "python"}[what]
            if what == "lowered":
                st.caption("No device code: the fpga target is simulated. This is the lowered TensorIR the "
                           "simulator executes; each pragma_fpga_* loop nest is one accelerator instruction "
                           "(DMA load, accumulator reset, GEMM, DMA store) in VTA's buffer scopes.")
            start = text.find('extern "C" __global__') if what == "cuda" else -1
            st.code(text[max(start, 0):], language=lang, height=420)
            if start > 0:                       # the kernel first; the header NVRTC needs on request
                with st.expander("The whole file, with the header TVM prepends for NVRTC"):
                    st.code(text, language=lang, height=420)


def sass_tab(v: View) -> None:
    """Every memory instruction of the SASS with the tensor it touches and how often warps executed it."""
    try:
        c = counts_of(v, v.knobs, 1.5, machine=True)
    except L.Pending:
        st.caption("The SASS's execution counts are still being emulated; the listing follows.")
        c = None
    table, listing = L.sass_table(*v.key[:3], c is not None and "error" not in c.machine)
    st.caption(L.mix_caption(L.sass_mix(*v.key[:3]), v.knobs))
    st.caption("The memory instructions of the compiled kernel (the pinned NVRTC's sm_90 cubin), each with the "
               "tensor its lanes' addresses fall in and the warp instructions executed at full size.")
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"executed (warps)": st.column_config.NumberColumn(format="localized"),
                                "sectors": st.column_config.NumberColumn(format="localized")})
    with st.expander("The whole listing (nvdisasm)"):
        st.code(listing, language="nasm", height=420)


# ---------------------------------------------------------------- roofline
def roofline_section(v: View, got: dict | None) -> None:
    st.subheader("Roofline")
    (clabel, cval), (mlabel, mval) = L.ceilings(v.target)
    compute, memory = [viz.Ceiling(clabel, cval)], [viz.Ceiling(mlabel, mval)]
    pts = []
    named = {"current": v.knobs, "naive": K.preset(v.op, v.target, "naive", v.shape)}
    if got:
        named["baseline"] = K.preset(v.op, v.target, "baseline", v.shape)
    sim = v.target == "fpga"
    for label, k in named.items():
        try:
            c = counts_of(v, k, 0)
            ai = c.intensity()["global"]
        except Exception:       # noqa: BLE001 - reported in the counts section
            continue
        if sim and label != "baseline" and getattr(c, "timing", None):      # the simulated time, from the counts
            pts.append(viz.Point(label, ai, c.flops / c.timing["ms"] / 1e6, "simulated"))
        elif label != "baseline":
            pts.append(viz.Point(label, ai, viz.attainable(ai, compute, memory), "predicted"))
        if got and label in got and not sim:
            pts.append(viz.Point(label, ai, got[label].gflops, "measured"))
    if v.target == "cuda":
        rec = L.recorded_runs(v.op)
        if not rec.empty and {"preset", "shape", "gflops", "device"} <= set(rec.columns):
            mine = rec[(rec["shape"] == L.shape_text(v.shape)) & rec["preset"].isin(K.PRESET_NAMES)]
            latest = mine.sort_values("date").drop_duplicates(["preset", "device"], keep="last")
            for _, row in latest.iterrows():
                try:                    # the knobs the run used (presets change as tuning goes on)
                    text = row.get("knobs")
                    k = (K.parse_knobs(v.op, v.target, text) if isinstance(text, str) and text
                         else K.preset(v.op, v.target, row["preset"], v.shape))
                    ai = counts_of(v, k, 0).intensity()["global"]
                    pts.append(viz.Point(f"{row['preset']} ({row['device']}, {str(row['date'])[:10]})", ai,
                                         float(row["gflops"]), "measured"))
                except Exception:       # noqa: BLE001 - a run the simulator cannot count (yet) is left off
                    continue
    roof = viz.roofline(pts, compute, memory,
                        title=f"{OPS[v.op].title} on {v.target}: DRAM roofline of the modelled accelerator" if sim
                        else f"{OPS[v.op].title} on {v.target}: global-memory roofline")
    chart(roof, "lab_roof")
    if sim:
        st.caption("Arithmetic intensity = FLOPs / bytes moved between DRAM and the accelerator, from the "
                   "simulator's exact counts. The ceilings are the modelled accelerator's peaks, not measurements. "
                   "The square points are the simulated times (cycles / clock), which the cycle model never lets "
                   "beat either bound; a point still being simulated sits on the roof as a prediction.")
        download(roof, f"{v.op}-{v.target}-roofline", "lab_dl_roof")
        return
    st.caption("Arithmetic intensity = FLOPs / bytes of global loads and stores, from the exact counts. Predicted "
               "points sit on the roof; measured points appear once a kernel has been timed (the latest recorded "
               "run per preset on the GPU). The counts charge every global load to DRAM, so a kernel whose "
               "re-reads hit the L1/L2 caches can measure above this roof.")
    download(roof, f"{v.op}-{v.target}-roofline", "lab_dl_roof")


# ---------------------------------------------------------------- the page
st.title("Kernel Lab")
picked = guarded(controls)
if picked is None:
    st.stop()
op, target, shape, preset = picked
off = L.unsupported(op, target)
if off:                                     # shown disabled, with the reason (like cuda without a GPU)
    st.warning(f"**The `{target}` target is disabled for {OPS[op].title}.** {off}", icon=":material/block:")
    st.caption(f"Pick another target above; {target} is available for "
               + ", ".join(o for o in OPS if not L.unsupported(o, target)) + ".")
    st.stop()
why_not = build.target_available(target)
if why_not:
    st.info(f"{why_not} The simulation, the counts, the CUDA source and the runs recorded on a GPU are below.")
if target == "fpga":
    st.info("The fpga target is a VTA-style accelerator, simulated: the tile, the counts, the time and the result "
            "on this page come from its behavioural simulator (kernels/fpga); every time is simulated "
            "(cycles / clock), none is measured.", icon=":material/developer_board:")
left, main = st.columns([1, 3], gap="large")
with left:
    got_knobs = guarded(knob_panel, op, target, shape, preset)
    if target == "fpga":
        guarded(accel_card)
if got_knobs is None:
    st.stop()
knobs, base, problems = got_knobs
good = ss.setdefault("lab_good", {})
if not problems:
    good[(op, target, tuple(shape.items()))] = knobs
kn = good.get((op, target, tuple(shape.items())))
with main:
    if problems:
        if kn is None:
            st.warning("Fix the knobs on the left to see this schedule.")
            st.stop()
        st.warning(f"Showing the last valid schedule until the knobs are fixed: `{K.knobs_text(kn)}`")
    view = View(op, target, shape, preset, kn, kn != base, why_not)
    st.caption(f"Shape `{L.shape_text(shape)}` · knobs `{K.knobs_text(kn)}` "
               + (f"(edited from the `{preset}` preset)" if view.edited else f"(the `{preset}` preset)"))
    drawn = guarded(tile_section, view)
    guarded(counts_section, view, drawn)
    if target == "fpga":
        guarded(time_section, view)
    timed = guarded(kernel_section, view)
    guarded(tune_section, view)
    guarded(code_section, view)
    guarded(roofline_section, view, timed)
    if L.counting(ASKED):
        poll_counts(set(ASKED))
ss.setdefault("lab_timing", {})["whole page"] = time.perf_counter() - _t0
if os.environ.get("KERNEL_LAB_TIMING"):        # server-side timings on stderr, for measuring the page
    print("lab timing", {k: round(x, 3) for k, x in ss["lab_timing"].items()}, f"at {time.time():.2f}",
          file=sys.stderr, flush=True)
