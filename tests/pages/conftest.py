"""AppTest fixtures: the app from its entry point, with its own results store."""
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_LAB_DB", str(tmp_path / "results.sqlite"))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    return at.run()
