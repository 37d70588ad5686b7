"""Kernel Lab: the page config and the navigation around every page (`streamlit run app.py`)."""
import streamlit as st

st.set_page_config(page_title="Kernel Lab", page_icon=":material/memory:", layout="wide")
page = st.navigation([st.Page("pages/lab.py", title="Lab", icon=":material/science:", default=True)])
page.run()
