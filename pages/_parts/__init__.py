"""Helpers the page scripts share: cached calls into kernels/ and widget builders (kept out of pages/ top level, which Streamlit would list as pages)."""
