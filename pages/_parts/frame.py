"""The frame around every page: the iframe look for `?embed=true`, and the Lab's view in the URL.

The pages beyond the Lab bind their widgets to query parameters themselves (`bind="query-params"`). The Lab's
widgets are not bound, so app.py calls `lab_from_url` before it runs and `lab_to_url` after: the link then
carries the operator, target, shape, preset and the knobs that differ from the preset, and opening it sets
the Lab's widgets to that view. This reads and writes the Lab's own session-state keys (pages/lab.py)."""
from __future__ import annotations

import runpy
from dataclasses import fields
from pathlib import Path

import streamlit as st

from kernels import knobs as K
from kernels.ops import OPS
from pages._parts import lab as L

EMBED_CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stHeader"],
[data-testid="stToolbar"], [data-testid="stDecoration"], [data-testid="stStatusWidget"], footer {
  display: none !important;}
[data-testid="stMainBlockContainer"], .block-container {
  padding: 0.5rem 1rem 1rem 1rem !important; max-width: 100% !important;}
[data-testid="stAppViewContainer"] > section, [data-testid="stMain"] {padding-top: 0 !important;}
h1 {padding-top: 0.25rem !important; font-size: 1.8rem !important;}
</style>"""
APP = Path(__file__).resolve().parents[2] / "app.py"
LAB_PARAMS = ("op", "target", "size", "shape", "preset", "knobs")
WRITTEN = "_frame_lab_url"          # the Lab parameters this session last wrote to the URL


def embedded() -> bool:
    """Whether the page was opened with `?embed=true` (Streamlit keeps that parameter out of st.query_params)."""
    try:
        return bool(st.context.is_embedded)
    except Exception:           # noqa: BLE001 - no browser context (e.g. under AppTest)
        return False


def embed_style() -> None:
    """No sidebar, header or toolbar and compact padding: the page as a figure inside someone else's page."""
    st.html(EMBED_CSS)


def _text(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def lab_params(ss) -> dict[str, str] | None:
    """The Lab's current view as query parameters, from its session state; None before it has drawn a view."""
    op, target = ss.get("lab_op"), ss.get("lab_target", L.TARGETS[0])
    size, preset, src = ss.get("lab_size", "speed test"), ss.get("lab_preset", "seed"), ss.get("lab_src")
    if op in OPS and target in L.TARGETS and L.unsupported(op, target):     # the target shown disabled
        out = {"op": op, "target": target, "preset": preset}
        if size == "custom" and ss.get(f"lab_custom_{op}"):
            out["shape"] = ss.get(f"lab_custom_{op}")
        else:
            out["size"] = size if size in OPS[op].sizes else "speed test"
        return out
    if op not in OPS or not src or tuple(src[:2]) != (op, target) or src[3] != preset:
        return None
    shape = dict(src[2])
    base = K.preset(op, target, preset, shape)
    diff = [f"{f.name}={_text(v)}" for f in fields(base)
            if (v := ss.get(f"lab_k_{op}_{target}_{f.name}", getattr(base, f.name))) != getattr(base, f.name)]
    out = {"op": op, "target": target, "preset": preset}
    if size == "custom":
        out["shape"] = L.shape_text(shape)
    else:
        out["size"] = size
    if diff:
        out["knobs"] = ",".join(diff)
    return out


def apply_lab_params(params: dict[str, str], ss) -> list[str]:
    """Set the Lab's widgets from query parameters; returns sentences for the parts that could not be used."""
    op = params.get("op", "gemm")
    if op not in OPS:
        return [f"The link names the operator '{op}'; choose one of {', '.join(OPS)}."]
    bad = []
    target = params.get("target", L.TARGETS[0])
    if target not in L.TARGETS:
        bad.append(f"The link names the target '{target}'; using {L.TARGETS[0]}.")
        target = L.TARGETS[0]
    preset = params.get("preset", "seed")
    if preset not in K.PRESET_NAMES:
        bad.append(f"The link names the preset '{preset}'; using seed.")
        preset = "seed"
    size = params.get("size", "speed test")
    if size not in OPS[op].sizes or size == "tile":
        size = "speed test"
    shape = dict(OPS[op].sizes[size])
    if "shape" in params:
        try:
            shape, size = K.parse_shape(op, params["shape"]), "custom"
            ss[f"lab_custom_{op}"] = L.shape_text(shape)
        except K.KnobError as e:
            bad += e.problems
    if L.unsupported(op, target):           # the Lab shows the target disabled, with its reason
        ss.update({"lab_op": op, "lab_target": target, "lab_size": size, "lab_preset": preset})
        return bad + ([f"The link's knobs are not used: {L.unsupported(op, target)}"] if params.get("knobs") else [])
    base = K.preset(op, target, preset, shape)
    knobs = base
    if params.get("knobs"):
        try:
            knobs = K.parse_knobs(op, target, params["knobs"], base)
        except K.KnobError as e:
            bad += e.problems
    ss.update({"lab_op": op, "lab_target": target, "lab_size": size, "lab_preset": preset,
               "lab_src": (op, target, tuple(shape.items()), preset)})
    for f in fields(knobs):
        ss[f"lab_k_{op}_{target}_{f.name}"] = getattr(knobs, f.name)
    return bad


def lab_from_url() -> None:
    """Before the Lab runs: a link whose Lab parameters this session did not write itself sets the view."""
    got = {k: v for k, v in st.query_params.to_dict().items() if k in LAB_PARAMS}
    ss = st.session_state
    if got and got != ss.get(WRITTEN):
        try:
            problems = apply_lab_params(got, ss)
        except Exception as e:  # noqa: BLE001 - a bad link shows its sentence, the Lab its default view
            problems = L.sentences(e)
        for s in problems:
            st.warning(f"From the link: {s}", icon=":material/link_off:")
        ss[WRITTEN] = got


def lab_to_url() -> None:
    """After the Lab ran: the URL says what it shows."""
    ss = st.session_state
    try:
        params = lab_params(ss)
    except Exception:           # noqa: BLE001 - a view the URL cannot describe keeps the old URL
        return
    if params is None:
        return
    ss[WRITTEN] = params
    if st.query_params.to_dict() != params:
        st.query_params.from_dict(params)


def through_app() -> None:
    """Call first on every page but the Lab. Streamlit treats a `pages/` folder as a version-1 multipage app
    until some session has called st.navigation (and streamlit.testing resets that before every run), so a
    first visit straight to /walkthrough would run the page alone, without app.py's config, navigation and
    embedding. Then: switch the process to st.navigation, as app.py's call would, run app.py in this same run
    (it runs this page inside its frame; a rerun would lose a button press) and stop the bare run here."""
    from streamlit.runtime.pages_manager import PagesManager
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
