"""The README's numbers come from the committed data, and its commands are the ones CI runs."""
from __future__ import annotations

from pathlib import Path

from bench.report import table

ROOT = Path(__file__).resolve().parent.parent


def test_readme_h200_table_is_generated_from_the_data():
    text = (ROOT / "README.md").read_text()
    quoted = text.split("<!-- h200-table -->")[1].split("<!-- /h200-table -->")[0].strip()
    assert quoted == table().strip()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    cmd = "pip install -r requirements.txt && python -m pytest"
    assert cmd in readme and cmd in ci
