"""bench.run's record layouts: how the steps' outputs become the data file its readers expect."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from bench import run

ROOT = Path(__file__).resolve().parents[2]


def plan_in(tmp_path, monkeypatch, record: str, data: str, steps: str) -> dict:
    f = tmp_path / "bench" / "plans" / "p.toml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f'title = "t"\ndevice = "cpu"\ndata = "{data}"\nrecord = "{record}"\n{steps}')
    monkeypatch.setattr(run, "ROOT", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return run.load(str(f))


def printing(*docs: dict) -> str:
    """Steps whose commands print these JSON documents."""
    out = ""
    for d in docs:
        out += f"[[steps]]\ncmd = '''python -c 'print({json.dumps(json.dumps(d))})' '''\n"
    return out


QUIET = {"echo": lambda *a, **k: None}


def test_last_is_the_last_step_s_document_with_the_plan_s_command(tmp_path, monkeypatch):
    plan = plan_in(tmp_path, monkeypatch, "last", "data/x.json",
                   printing({"rows": [1]}, {"rows": [1, 2], "device": "from the tool", "date": "2026-01-01"}))
    run.run(plan, **QUIET)
    got = json.loads((tmp_path / "data/x.json").read_text())
    assert got["rows"] == [1, 2] and got["device"] == "from the tool" and got["date"] == "2026-01-01"
    assert got["command"] == "python -m bench.run bench/plans/p.toml" and got["plan"] == "bench/plans/p.toml"


def test_runs_and_join_tag_each_entry_with_the_step_that_reproduces_it(tmp_path, monkeypatch):
    plan = plan_in(tmp_path, monkeypatch, "runs", "data/r.json", printing({"a": 1}, {"a": 2}))
    run.run(plan, **QUIET)
    got = json.loads((tmp_path / "data/r.json").read_text())
    assert [(r["a"], r["command"]) for r in got["runs"]] == [
        (1, "python -m bench.run bench/plans/p.toml --steps 1"), (2, "python -m bench.run bench/plans/p.toml --steps 2")]
    plan = plan_in(tmp_path, monkeypatch, "join:kernels", "data/j.json",
                   printing({"units": "ns", "kernels": [{"k": "a"}, {"k": "b"}]}, {"units": "ns", "kernels": [{"k": "c"}]}))
    run.run(plan, **QUIET)
    got = json.loads((tmp_path / "data/j.json").read_text())
    assert got["units"] == "ns" and [k["k"] for k in got["kernels"]] == ["a", "b", "c"]
    assert got["kernels"][2]["command"].endswith("--steps 2") and got["kernels"][0]["command"].endswith("--steps 1")
    # a later call of step 2 alone replaces step 2's entries and keeps step 1's
    plan = plan_in(tmp_path, monkeypatch, "join:kernels", "data/j.json",
                   printing({"units": "ns", "kernels": [{"k": "a"}, {"k": "b"}]}, {"units": "ns", "kernels": [{"k": "d"}]}))
    run.run(plan, steps=[2], **QUIET)
    got = json.loads((tmp_path / "data/j.json").read_text())
    assert [k["k"] for k in got["kernels"]] == ["a", "b", "d"]


def test_csv_writes_every_step_s_rows_with_their_command(tmp_path, monkeypatch):
    plan = plan_in(tmp_path, monkeypatch, "csv", "data/c.csv",
                   printing({"rows": [{"op": "gemm", "n": 1}]}, {"rows": [{"op": "conv1d", "n": 2}]}))
    run.run(plan, **QUIET)
    rows = list(csv.DictReader(open(tmp_path / "data/c.csv")))
    assert [(r["op"], r["n"], r["command"][-9:]) for r in rows] == [("gemm", "1", "--steps 1"), ("conv1d", "2", "--steps 2")]


def test_a_plan_with_a_bad_record_or_a_csv_mismatch_is_one_sentence(tmp_path, monkeypatch):
    with pytest.raises(run.PlanError, match="record 'table' is not one of"):
        plan_in(tmp_path, monkeypatch, "table", "data/x.json", printing({}))
    with pytest.raises(run.PlanError, match="needs record = \"csv\""):
        plan_in(tmp_path, monkeypatch, "last", "data/x.csv", printing({}))


def test_the_recorded_files_are_in_the_layout_their_plan_writes():
    """Each data file a plan names reads as that plan's record layout would write it."""
    for p in sorted((ROOT / "bench" / "plans").glob("*.toml")):
        plan = run.load(str(p))
        f = ROOT / plan["data"]
        if not f.exists():
            continue
        rec = plan.get("record", "steps")
        if rec == "csv":
            assert "command" in next(csv.DictReader(open(f))), p.name
            continue
        d = json.loads(f.read_text())
        assert d["command"].startswith(f"python -m bench.run bench/plans/{p.name}"), p.name
        if rec == "steps":
            assert isinstance(d["steps"], list) and all("rc" in s and "cmd" in s for s in d["steps"]), p.name
        elif rec == "runs":
            assert d["runs"] and all(r["command"].startswith("python -m bench.run") for r in d["runs"]), p.name
        elif rec.startswith("join:"):
            assert isinstance(d[rec[5:]], list) and d[rec[5:]], p.name


def test_a_deadline_stops_the_step_keeps_what_it_printed_and_starts_no_later_step(tmp_path, monkeypatch):
    """--deadline-s: a device call's limit. The step running at the deadline is stopped with its children (a
    grandchild holding its pipe would otherwise keep the runner waiting), its rows so far are recorded."""
    import time
    slow = ("import json, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(120)']); print(json.dumps({'row': 1}), flush=True); time.sleep(120)")
    steps = f"[[steps]]\nname = 'slow'\ncmd = '''python -c \"{slow}\"'''\n" + printing({"row": 2})
    plan = plan_in(tmp_path, monkeypatch, "steps", "data/d.json", steps)
    lines = []
    t0 = time.perf_counter()
    doc = run.run(plan, echo=lambda *a, **k: lines.append(" ".join(map(str, a))),
                  deadline_s=run.DEADLINE_MARGIN_S + 3)
    assert time.perf_counter() - t0 < 30
    got = json.loads((tmp_path / "data/d.json").read_text())
    assert [s["step"] for s in got["steps"]] == [1] and got["steps"][0]["rc"] == "timeout"
    assert got["steps"][0]["output"] == {"row": 1} and "--deadline-s" in got["steps"][0]["stderr"]
    assert any("not started, the deadline" in x for x in lines) and doc["steps"][0]["output"] == {"row": 1}


def test_a_cpu_plan_records_which_blas_numpy_ran_under_the_plans_environment(tmp_path, monkeypatch):
    """numpy's SGEMM kernel depends on the machine and on OPENBLAS_CORETYPE: a CPU plan's data says which ran."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    plan = plan_in(tmp_path, monkeypatch, "steps", "data/d.json", printing({"row": 1}))
    plan["env"] = {"OPENBLAS_CORETYPE": ""}
    run.run(plan, **QUIET)
    got = json.loads((tmp_path / "data/d.json").read_text())["blas"]
    assert isinstance(got, list) and got[-1] == {"env": {"OPENBLAS_CORETYPE": None,
                                                         "OPENBLAS_L2_SIZE": got[-1]["env"]["OPENBLAS_L2_SIZE"]}}
    assert any(i.get("internal_api") in ("openblas", "mkl", "blis") and i.get("architecture") for i in got[:-1])
    plan["env"] = {}
    run.run(plan, **QUIET)
    assert json.loads((tmp_path / "data/d.json").read_text())["blas"][-1]["env"]["OPENBLAS_CORETYPE"] == "Haswell"
