"""Hardware check: the machine's view (the compiled SASS, emulated here) next to the Nsight Compute counters
recorded on the GPU. First the held-out figure (random kernels predicted before they were profiled), then every
other profiled kernel, the regression set."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

import viz
from kernels import hwcheck
from pages._parts import recorded as R
from pages._parts import ui
from pages._parts.frame import through_app

through_app()


@st.cache_data(show_spinner=False)
def compared(path: str) -> pd.DataFrame:
    df = hwcheck.compare(Path(path))
    return df.assign(shape=df["shape"].map(lambda s: R.shape_text(json.loads(s))))


@st.cache_data(show_spinner=False)
def held_out() -> pd.DataFrame:
    return hwcheck.heldout()


@st.cache_data(show_spinner=False)
def still_waiting() -> list[dict]:
    return hwcheck.waiting()


def heldout_section() -> None:
    st.subheader("Held out: kernels nobody had measured")
    h = held_out()
    if h.empty:
        st.info("No held-out batch has been judged yet (python -m bench.heldout draw, then profile it on a GPU).")
        return
    n, ok = len(h), int(h["agrees"].sum())
    c = st.columns(3)
    c[0].metric("Kernels whose every counter agrees", f"{ok} of {n}", f"{100 * ok / n:.1f}%", delta_color="off",
                delta_arrow="off")
    c[1].metric("At shapes no tile divides", int(h["ragged"].sum()))
    c[2].metric("Batches", h["seed"].nunique())
    per = h.groupby("op")["agrees"].agg(["sum", "count"])
    st.markdown("Per operator: " + ", ".join(f"{op} {int(r['sum'])}/{int(r['count'])}" for op, r in per.iterrows())
                + ". Batches: " + "; ".join(f"seed {s} ({g['device'].iloc[0]}, profiled {g['measured_on'].iloc[0]})"
                                             for s, g in h.groupby("seed")) + ".")
    st.caption(f"Each batch: random valid knobs at random shapes for all four operators (or, drawn to judge one "
               f"rule of the emulator, one operator's knobs kept fixed where the rule applies), drawn with a seed from "
               f"the clock; the emulator's predictions were written (and committed) before the GPU profiled the "
               f"kernels, and the batch was judged once. Agreement: {hwcheck.PROMISE}. A kernel the emulator "
               "could not read counts as a miss.")
    miss = h[~h["agrees"]]
    if not miss.empty:
        with st.expander(f"The {len(miss)} kernel(s) that disagree"):
            st.dataframe(miss.drop(columns=["drawn", "device"]), hide_index=True, width="stretch")
    wait = still_waiting()
    if wait:
        st.caption(f"Predicted and committed, not yet profiled ({len(wait)} batch(es), not in the figures above): "
                   + "; ".join(f"seed {w['seed']}, {w['kernels']} kernels, drawn {w['drawn'][:10]} by "
                               f"`{w['command']}`" for w in wait) + ".")


def summary(df: pd.DataFrame) -> None:
    n, ok = len(df), int(df["within"].sum())
    kernels = df.groupby(["op", "shape", "knobs"]).ngroups
    c = st.columns(3)
    c[0].metric("Within the promised agreement", f"{ok} of {n}", f"{100 * ok / max(n, 1):.0f}% of kernel-metric pairs",
                delta_color="off", delta_arrow="off")
    c[1].metric("Kernels profiled", kernels)
    scored = df[df["rel_diff"].notna()]
    if not scored.empty:
        w = scored.loc[scored["rel_diff"].abs().idxmax()]
        c[2].metric("Worst difference", f"{100 * w['rel_diff']:+.1f}%", f"{w['op']} {w['preset']} · {w['metric']}",
                    delta_color="off", delta_arrow="off")
        st.markdown(f"**Worst row:** {w['op']} `{w['shape']}` ({w['preset']}, `{w['knobs']}`), {w['metric']}: "
                    f"measured {int(w['measured']):,}, predicted {int(w['predicted']):,} "
                    f"({100 * w['rel_diff']:+.2f}%, allowed ±{100 * w['allowed']:.0f}%).")
    missing = int(df["predicted"].isna().sum())
    st.caption(f"The agreement (kernels/hwcheck.py): {hwcheck.PROMISE}."
               + (f" {missing} pair(s) have no stored prediction; they count as not within." if missing else ""))


def table(df: pd.DataFrame) -> None:
    c = st.columns([1, 1, 1])
    ops = c[0].multiselect("Operator", sorted(df["op"].unique()), key="op", bind="query-params",
                           placeholder="every operator")
    metrics = c[1].multiselect("Metric", list(hwcheck.METRICS.values()), key="metric", bind="query-params",
                               placeholder="every metric")
    outside = c[2].toggle("Only rows outside the agreement", key="outside", bind="query-params")
    part = df[df["op"].isin(ops)] if ops else df
    part = part[part["metric"].isin(metrics)] if metrics else part
    part = part[~part["within"]] if outside else part
    shown = part[["op", "shape", "preset", "metric", "measured", "predicted", "rel_diff", "allowed", "within",
                  "knobs", "ncu_metric"]]
    st.dataframe(shown, hide_index=True, width="stretch", column_config={
        "measured": st.column_config.NumberColumn("measured (ncu)", format="localized"),
        "predicted": st.column_config.NumberColumn("predicted", format="localized"),
        "rel_diff": st.column_config.NumberColumn("difference", format="percent",
                                                  help="(predicted − measured) / measured"),
        "allowed": st.column_config.NumberColumn("allowed ±", format="percent"),
        "within": st.column_config.CheckboxColumn("within")})
    st.download_button("Download as CSV", shown.to_csv(index=False), file_name="hardware-check.csv", mime="text/csv",
                       key="hw_csv", on_click="ignore", icon=":material/download:")
    ui.chart(viz.agreement(part, title="Predicted against measured, one point per kernel and metric"), "hw_scatter",
             "hardware-check")
    zeros = int(((part["measured"] == 0) | (part["predicted"] == 0)).sum())
    if zeros:
        st.caption(f"{zeros} pair(s) with a zero count (e.g. shared-memory instructions of a kernel that uses none) "
                   "are in the table but cannot sit on a log scale, so the plot leaves them out.")


def provenance(df: pd.DataFrame) -> None:
    raw = hwcheck.recorded()
    st.subheader("Where the counters come from")
    st.markdown(f"Nsight Compute on the **{', '.join(sorted(raw['device'].unique()))}**, "
                f"{', '.join(sorted(str(d)[:10] for d in raw['date'].unique()))} (TVM "
                f"{', '.join(sorted(map(str, raw['tvm'].unique())))}), recorded in `data/ncu_h200.csv`.")
    for cmd in raw["command"].unique():
        st.code(cmd, language="bash")
    st.caption("The predictions come from the same knobs' compiled SASS (the pinned NVRTC's cubin, the one the GPU "
               "runs), emulated at full size (kernels/sass), stored in data/heldout/regression.json by "
               "`python -m bench.heldout regress` and re-checked by the tests; nothing here runs on a GPU.")


st.title("Hardware check")
st.caption("How far the machine's view is trusted: for kernels profiled with Nsight Compute on the GPU, the "
           "counts of their SASS emulated here, next to the counters the hardware reported.")
ui.guarded(heldout_section)
st.subheader("Regression set: every other profiled kernel")
df = ui.guarded(compared, str(hwcheck.DATA))
if df is None or df.empty:
    st.info("No Nsight Compute counters are recorded under data/.")
    st.stop()
ui.guarded(summary, df)
ui.guarded(table, df)
ui.guarded(provenance, df)
ui.share_link("hardware_check")
