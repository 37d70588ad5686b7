"""Streamlit pages (st.navigation in app.py lists them); shared helpers live in pages/_parts."""
