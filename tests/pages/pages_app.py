"""Open any page of the app under streamlit.testing, with its own results store (imported by the page tests)."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_page(page: str | None, tmp_path, monkeypatch, query: dict | None = None) -> AppTest:
    """The app from app.py (so the frame and navigation run), switched to pages/<page>.py when given."""
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "results.sqlite"))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(query or {})
    if page:
        at.switch_page(f"pages/{page}.py")
    return at.run()


def no_failures(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
