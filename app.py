"""Kernel Lab: the page config and the navigation around every page (`streamlit run app.py`)."""
import streamlit as st

from pages._parts import frame

st.set_page_config(page_title="Kernel Lab", page_icon=":material/memory:", layout="wide")
embed = frame.embedded()
lab = st.Page("pages/lab.py", title="Lab", icon=":material/science:", default=True)
page = st.navigation([lab,
                      st.Page("pages/walkthrough.py", title="Walkthrough", icon=":material/footprint:"),
                      st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
                      st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/leaderboard:"),
                      st.Page("pages/hardware_check.py", title="Hardware check", icon=":material/fact_check:")],
                     position="hidden" if embed else "sidebar")
if embed:
    frame.embed_style()
if page.title != lab.title:
    page.run()
else:
    frame.lab_from_url()
    try:
        page.run()
    finally:                        # also after st.stop() and st.rerun(): the URL says what the Lab shows
        frame.lab_to_url()
