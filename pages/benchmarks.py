"""Benchmarks: every recorded run (the GPU tables shipped in data/ and this machine's results store) as a
filterable table with CSV download, and plots of time, speed-up over baseline and fraction of the roofline."""
from __future__ import annotations

import pandas as pd
import streamlit as st

import viz
from kernels import build
from pages._parts import lab as L
from pages._parts import recorded as R
from pages._parts import ui
from pages._parts.frame import through_app

through_app()

PRESETS = ("baseline", "naive", "seed", "best", "dlight")
SHOWN = ["device", "date", "op", "shape", "name", "median_ms", "vs_ref", "vs_baseline", "roof_fraction", "gflops",
         "gbps", "ok", "rel_err", "spread_ms", "reference", "ref_ms", "reference_timing", "knobs", "run", "source"]


def ceilings() -> tuple[dict[str, tuple[float, float]], list[str]]:
    """{device: (peak GFLOP/s, bandwidth GB/s)} from measurements, and a line saying where each came from."""
    out, said = {}, []
    got = L.gpu_ceilings()
    if got:
        (cl, cv), (ml, mv) = got
        out["NVIDIA H200"] = (cv, mv)
        said.append(f"NVIDIA H200: {cl}; {ml}")
    (cl, cv), (ml, mv) = L.cpu_ceilings()
    out[build.device_name("cpu")] = (cv, mv)
    said.append(f"this machine: {cl}; {ml}")
    return out, said


def table(runs: pd.DataFrame) -> pd.DataFrame:
    runs = runs[runs["median_ms"].notna()]
    peaks, _ = ceilings()
    return R.roofline_fraction(R.speedups(runs), peaks)


def filters(df: pd.DataFrame) -> pd.DataFrame:
    c = st.columns([1.2, 1, 1.4, 1])
    devices = c[0].multiselect("Device", sorted(df["device"].dropna().unique()), key="device", bind="query-params",
                               placeholder="every device")
    ops = c[1].multiselect("Operator", sorted(df["op"].dropna().unique()), key="op", bind="query-params",
                           placeholder="every operator")
    part = df[df["device"].isin(devices)] if devices else df
    part = part[part["op"].isin(ops)] if ops else part
    shapes = c[2].multiselect("Shape", list(dict.fromkeys(part["shape"])), key="shape", bind="query-params",
                              placeholder="every shape")
    part = part[part["shape"].isin(shapes)] if shapes else part
    only = c[3].toggle("Presets only", key="presets", bind="query-params",
                       help="baseline, naive, seed, best and TVM's default GPU schedule (dlight); off: the tuning "
                            "candidates too")
    return part[part["name"].isin(PRESETS)] if only else part


def runs_table(part: pd.DataFrame) -> None:
    st.dataframe(part[[c for c in SHOWN if c in part]], hide_index=True, width="stretch", column_config={
        "median_ms": st.column_config.NumberColumn("median ms", format="%.4g"),
        "vs_ref": st.column_config.NumberColumn("vs reference", format="%.3gx",
                                                help="reference time / kernel time: above 1 the kernel is faster"),
        "vs_baseline": st.column_config.NumberColumn("vs baseline", format="%.3gx",
                                                     help="baseline time / this time, same table and shape"),
        "roof_fraction": st.column_config.ProgressColumn("of roofline", format="percent", min_value=0, max_value=1),
        "gflops": st.column_config.NumberColumn("GFLOP/s", format="%.4g"),
        "gbps": st.column_config.NumberColumn("GB/s", format="%.4g"),
        "rel_err": st.column_config.NumberColumn("rel. error", format="%.1e"),
        "ref_ms": st.column_config.NumberColumn("reference ms", format="%.4g")})
    st.download_button("Download these rows as CSV", part[[c for c in SHOWN if c in part]].to_csv(index=False),
                       file_name="kernel-lab-runs.csv", mime="text/csv", key="bench_csv", on_click="ignore",
                       icon=":material/download:")


def plots(part: pd.DataFrame, said: list[str]) -> None:
    combos = list(dict.fromkeys(zip(part["op"], part["shape"])))
    if not combos:
        return
    op, shape = st.selectbox("Plot", combos, format_func=lambda c: f"{c[0]} at {c[1]}", key="bench_plot")
    one = part[(part["op"] == op) & (part["shape"] == shape)]
    name = f"{op}-{shape.replace('=', '').replace(',', '-')}"
    hover = ("knobs", "ok")
    tabs = st.tabs(["Time per preset", "Speed-up over baseline", "Fraction of roofline"])
    with tabs[0]:
        ui.chart(viz.grouped_bars(one, "name", "median_ms", "run", title=f"{op} at {shape}: median time per run",
                                  y_title="median ms", hover=hover), "bench_time", f"{name}-time")
    with tabs[1]:
        if one["vs_baseline"].notna().any():
            ui.chart(viz.grouped_bars(one, "name", "vs_baseline", "run", unit="x", hover=hover, reference=1,
                                      title=f"{op} at {shape}: speed-up over the baseline of the same table",
                                      y_title="baseline time / time", reference_label="baseline"),
                     "bench_speedup", f"{name}-speedup")
        else:
            st.info("No baseline run is recorded for this operator and shape in these rows.")
    with tabs[2]:
        if one["roof_fraction"].notna().any():
            ui.chart(viz.grouped_bars(one, "name", "roof_fraction", "run", unit="%", hover=hover, reference=1,
                                      title=f"{op} at {shape}: measured GFLOP/s over the roof at the minimum traffic",
                                      y_title="fraction of the roofline", reference_label="the roof"),
                     "bench_roof", f"{name}-roofline")
        else:
            st.info("No measured ceilings for these devices.")
        st.caption("The roof at the operator's minimum-traffic intensity (FLOPs / (each input read once + the output "
                   "written once)): min(peak, bandwidth x intensity). Ceilings, measured: " + " · ".join(said) + ".")


def provenance() -> None:
    st.subheader("Where the numbers come from")
    st.dataframe(R.provenance(), hide_index=True, width="stretch")
    st.caption("The first tuning pass timed its references (cuBLAS, cuDNN through torch) as plain back-to-back "
               "calls, without CUDA graphs, so host overhead is in those reference times; the later table replays "
               "them from a CUDA graph. Kernel times were taken the same way in both (TVM's time_evaluator); since "
               "2026-12-07 kernels are replayed from CUDA graphs too (the results store's `timer`). "
               "Runs from this machine's results store are listed with source `results store`.")


# ---------------------------------------------------------------- the page
st.title("Benchmarks")
st.caption("Every recorded run: the GPU benchmark tables shipped in data/ and the runs this machine recorded "
           "(the Lab's and Compare's Compile & run, and `python -m kernels run --record`).")
runs = ui.guarded(ui.recorded_runs)
full = ui.guarded(table, runs) if runs is not None and not runs.empty else None
if full is None or full.empty:
    st.info("No recorded runs yet.")
    st.stop()
part = ui.guarded(filters, full)
if part is not None:
    local = int((full["source"].str.startswith("results store")).sum())
    st.caption(f"{len(part)} of {len(full)} runs shown ({local} from this machine's results store"
               + ("" if local else ": none yet, time a kernel in the Lab") + ").")
    ui.guarded(runs_table, part)
    _, said = ceilings()
    ui.guarded(plots, part, said)
ui.guarded(provenance)
ui.share_link("benchmarks")
