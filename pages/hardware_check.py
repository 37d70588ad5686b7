"""Hardware check: the simulator's predicted counts next to the Nsight Compute counters recorded on the GPU for
the same kernels, with the difference and whether it is within the agreement the model promises."""
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


@st.cache_data(show_spinner="Counting every profiled kernel with the simulator (a few seconds)…")
def compared(path: str) -> pd.DataFrame:
    df = hwcheck.compare(Path(path))
    return df.assign(shape=df["shape"].map(lambda s: R.shape_text(json.loads(s))))


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
    st.caption("The promise (kernels/hwcheck.py): global load/store instructions and global load sectors exact "
               "where the tiles divide the shape, within 2% otherwise; shared-memory instructions within 2%."
               + (f" {missing} pair(s) have no prediction (the simulator leaves them out, and says so); they count "
                  "as not within." if missing else ""))


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
                  "tiles_divide", "knobs", "ncu_metric"]]
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
    st.caption("The predictions come from the same knobs' lowered TensorIR, counted at full size on this machine "
               "(kernels.hwcheck.compare); nothing here runs on a GPU.")


st.title("Hardware check")
st.caption("How far the simulator is trusted: for every kernel profiled with Nsight Compute on the GPU, the "
           "counts the simulator predicts from the kernel's TensorIR, next to the counters the hardware reported.")
df = ui.guarded(compared, str(hwcheck.DATA))
if df is None or df.empty:
    st.info("No Nsight Compute counters are recorded under data/.")
    st.stop()
ui.guarded(summary, df)
ui.guarded(table, df)
ui.guarded(provenance, df)
ui.share_link("hardware_check")
