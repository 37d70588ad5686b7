"""Streamlit helpers the pages beyond the Lab share: guarded sections, charts with their HTML download,
full-size counts that may still be running, and the link to the current view."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

import viz
from pages._parts import lab as L


def guarded(fn, *args, **kw):
    """Run one section; a failure becomes its sentence in place (never a traceback) and the page goes on."""
    try:
        return fn(*args, **kw)
    except Exception as e:      # noqa: BLE001
        for s in L.sentences(e):
            st.error(s, icon=":material/error:")
        return None


def chart(fig, key: str, name: str, **kw) -> None:
    """The figure (theme=None keeps the level colours) and a button that downloads it as standalone HTML."""
    st.plotly_chart(fig, theme=None, key=key, config={"displaylogo": False}, **kw)
    st.download_button("Download as HTML", data=lambda: viz.to_html(fig, title=f"Kernel Lab: {name}"),
                       file_name=f"{name}.html", mime="text/html", key=f"{key}_html", on_click="ignore",
                       icon=":material/download:")


def counts(op: str, shape: dict, knobs, target: str, wait: float, asked: set):
    """Full-size counts, with the machine's (the emulated SASS's) on CUDA, or raises L.Pending (the background
    worker keeps counting; `asked` collects the key so the page can poll for it)."""
    machine = target == "cuda"
    asked.add((op, tuple(shape.items()), knobs, target, machine))
    return L.full_counts(op, tuple(shape.items()), knobs, target, wait, machine)


@st.fragment(run_every=2.0)
def poll(keys: set) -> None:
    """While full-size counts run in the background, check every 2 s and redraw the page when they land."""
    if not L.counting(keys):
        st.rerun()
    st.caption(":material/hourglass_top: Counting at full size in the background; the page redraws when done.")


def share_link(path: str = "") -> None:
    """The link that reproduces this view (the query parameters the page's widgets are bound to)."""
    params = st.query_params.to_dict()
    url = str(st.context.url or "").split("?")[0]
    if path and not url.rstrip("/").endswith(path):
        url = url.rstrip("/") + "/" + path
    query = urlencode(params)
    with st.expander("Share or embed this view", icon=":material/share:"):
        st.caption("This link opens the page as you see it now; add `embed=true` for an iframe.")
        st.code(f"{url}?{query}" if query else url, language=None)
        embed = f"{url}?{urlencode({**params, 'embed': 'true'})}"
        st.code(f'<iframe src="{embed}" width="100%" height="900" style="border:0"></iframe>', language="html")


@st.cache_data(ttl=30, show_spinner=False)
def _bench(folder: str):
    from pages._parts import recorded as R
    return R.bench_runs(Path(folder))


def recorded_runs(with_store: bool = True):
    """Every recorded run: the tables under data/ (cached) and, fresh each time, this machine's results store."""
    import pandas as pd

    from kernels import results
    from pages._parts import recorded as R
    parts = [_bench(str(R.data_dir()))]
    if with_store:
        try:
            parts.append(R.store_runs(results.load()))
        except Exception:       # noqa: BLE001 - an unreadable store leaves the shipped data
            pass
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else R.bench_runs(Path("/nonexistent"))


def from_url(key: str, options, default) -> None:
    """For a widget whose option labels are too long for the URL: seed its state once per visit from the short
    `key` query parameter (an unknown value falls back to `default`). Pair with to_url after the widget."""
    if key not in st.session_state:
        raw = st.query_params.get(key)
        hit = [o for o in options if str(o) == raw]
        st.session_state[key] = hit[0] if hit else default


def to_url(key: str, value, default) -> None:
    """Keep the widget's value in the URL (left out when it is the default, so links stay short)."""
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
