"""The machine's view against the hardware: the recorded Nsight Compute data, the stored predictions for it,
and the held-out batches (data/heldout), whose figure the README and the Hardware check page report."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from kernels import hwcheck


def test_the_recorded_table_covers_four_operators_and_twenty_kernels():
    t = hwcheck.recorded()
    assert set(t.op) == {"gemm", "conv1d", "dwconv2d", "dwsep_conv2d"}
    assert len(t) >= 20
    assert set(t.device) == {"NVIDIA H200"} and t.date.notna().all() and t.command.notna().all()


def test_the_stored_predictions_agree_with_every_recorded_kernel():
    df = hwcheck.compare()
    assert df.groupby(["op", "shape", "knobs"]).ngroups == len(hwcheck.recorded().drop_duplicates(
        ["op", "shape", "knobs"]))
    assert df["predicted"].notna().all()
    assert df["within"].all(), df[~df["within"]][["op", "shape", "metric", "measured", "predicted"]].to_string()


def test_agreement_is_exact_but_for_shared_memory_within_one_percent():
    shared, sectors = "smsp__inst_executed_op_shared_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    assert hwcheck.agrees(shared, 1009, 1000) and not hwcheck.agrees(shared, 1011, 1000)
    assert hwcheck.agrees(sectors, 1000, 1000) and not hwcheck.agrees(sectors, 1001, 1000)
    assert not hwcheck.agrees(sectors, None, 1000)


SM_90 = ("NVIDIA H200", "NVIDIA H100 80GB HBM3")    # one architecture: the same SASS, the same counts


def test_every_judged_batch_was_predicted_before_it_was_measured():
    for b in hwcheck.batches():
        assert b["drawn"] < b["measured"]["date"] and b["measured"]["device"] in SM_90
        assert isinstance(b["seed"], int) and b["command"].startswith("python -m bench.heldout draw")
        for e in b["kernels"]:
            assert ("predicted" in e) != ("error" in e)
            assert [k in e for k in ("measured", "not_launched", "fault")].count(True) == 1, e["id"]
            assert "fault" not in e or e["error"].startswith("Misaligned")      # launched alone: it was predicted
            assert "sass_hash" in e


def test_the_readme_reports_the_held_out_figure():
    h = hwcheck.heldout()
    if h.empty:
        return
    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    m = re.search(r"(\d+) of (\d+) held-out kernels", readme)
    assert m and (int(m.group(1)), int(m.group(2))) == (int(h["agrees"].sum()), len(h))
    for seed in h["seed"].unique():
        assert str(seed) in readme


def test_the_readme_names_every_batch_still_waiting_for_its_judgement():
    """A batch drawn and committed but not yet profiled is named in the README with its kernels (and, drawn
    filtered, how many were drawn for them); every kernel of it is predicted or a miss on record, and where it
    was drawn with --differ, the two rules predict every kept kernel apart."""
    readme = " ".join(Path(__file__).resolve().parents[2].joinpath("README.md").read_text().split())
    waiting = [json.loads(p.read_text()) for p in sorted(hwcheck.HELDOUT.glob("batch-*.json"))]
    waiting = [b for b in waiting if b["measured"] is None]
    for b in waiting:
        assert f"seed {b['seed']}" in readme
        assert all(("predicted" in e) != ("error" in e) for e in b["kernels"])
        if "--differ" in b["command"]:
            assert all(e["other_rule"].get("predicted") != e["predicted"] for e in b["kernels"] if "predicted" in e)
        if "candidates" in b:
            assert f"{len(b['kernels'])} of {sum(b['candidates'].values())} drawn" in readme
        else:
            assert f"{len(b['kernels'])} kernels" in readme


def test_waiting_lists_the_batches_drawn_but_not_yet_judged_oldest_first(tmp_path):
    for seed, drawn, measured in ((1, "2026-12-07T02:00:00+00:00", None), (2, "2026-12-07T01:00:00+00:00", None),
                                  (3, "2026-12-06T00:00:00+00:00", {"date": "2026-12-06T01:00:00+00:00"})):
        (tmp_path / f"batch-{seed}.json").write_text(json.dumps(
            {"seed": seed, "drawn": drawn, "command": f"python -m bench.heldout draw --seed {seed}",
             "kernels": [{"id": "gemm-0"}] * seed, "measured": measured}))
    assert hwcheck.waiting(tmp_path) == [
        {"seed": 2, "drawn": "2026-12-07T01:00:00+00:00", "kernels": 2, "command": "python -m bench.heldout draw --seed 2"},
        {"seed": 1, "drawn": "2026-12-07T02:00:00+00:00", "kernels": 1, "command": "python -m bench.heldout draw --seed 1"}]


def test_a_batch_is_judged_once(tmp_path):
    from bench import heldout
    b = {"seed": 1, "drawn": "2026-01-01T00:00:00+00:00", "kernels": [], "measured": {"date": "2026-01-02"}}
    p = tmp_path / "batch-1.json"
    p.write_text(json.dumps(b))
    with pytest.raises(SystemExit, match="judged once"):
        heldout.judge(str(p), str(p), "NVIDIA H200", "cmd")


def _ncu_csv(counts: list[dict], report: dict) -> str:
    """An `ncu --csv --print-units base` log of launches with these counters, the launch's report before it."""
    head = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
    rows = [f'"{i}","1","main_kernel","{m}","inst","{v:,}"' for i, c in enumerate(counts) for m, v in c.items()]
    return "\n".join(["==PROF== Connected to process 1", json.dumps(report), head, *rows]) + "\n"


def test_a_kernel_the_driver_cannot_launch_is_judged_neither_hit_nor_miss(tmp_path):
    """launch skips a kernel whose cubin the driver refuses (its report names it); judge pairs ncu's launches with
    the kernels that ran, and counts the skipped one apart, in no figure of agreement."""
    from bench import heldout
    pred = {k: 100 for k in heldout.NCU}
    ks = [{"id": f"gemm-{i}", "op": "gemm", "shape": {"M": 8, "N": 8, "K": 8}, "knobs": "tile_m=8",
           "remainder": False, "predicted": dict(pred), "sass_hash": "x", "launches": [{"name": "main_kernel"}]}
          for i in range(3)]
    b = tmp_path / "batch-5.json"
    b.write_text(json.dumps({"seed": 5, "drawn": "2026-12-05T00:00:00+00:00", "kernels": ks, "measured": None}))
    wrong = {**{m: 100 for m in heldout.NCU.values()}, heldout.NCU["global_ld"]: 900}
    csv = tmp_path / "ncu.csv"
    csv.write_text(_ncu_csv([{m: 100 for m in heldout.NCU.values()}, wrong],
                            {"launched": 2, "skipped": {"gemm-1": "over the limit"}, "hash_mismatches": []}))
    heldout.judge(str(b), str(csv), "NVIDIA H100 80GB HBM3", "cmd", "2026-12-06T00:00:00+00:00")
    out = json.loads(b.read_text())
    assert [e.get("agrees") for e in out["kernels"]] == [True, None, False]
    assert out["kernels"][1]["not_launched"] == "over the limit" and "measured" not in out["kernels"][1]
    assert out["kernels"][2]["measured"]["global_ld"] == 900
    assert out["summary"]["kernels"] == 2 and out["summary"]["agree"] == 1
    assert out["summary"]["not_launched"] == ["gemm-1"]
    h = hwcheck.heldout(tmp_path)
    assert list(h["id"]) == ["gemm-0", "gemm-2"] and list(h["agrees"]) == [True, False]


def test_profile_on_the_gpu_then_judge_profiled_here(tmp_path, monkeypatch):
    """profile (on the GPU machine) unpacks the carried cubins, runs each batch under ncu and its predicted faults,
    and leaves in one archive all that judge-profiled needs here: the device, when each profile began, the ncu log
    and the faults; judge-profiled records them with the command and keeps the log gzipped beside the batch. A
    batch already judged is refused before anything runs, and a folder without profiles says so."""
    import gzip
    from bench import heldout
    data, cubins, out, bin_ = (tmp_path / x for x in ("data", "cubins", "out", "bin"))
    monkeypatch.setattr(heldout, "DATA", data)
    monkeypatch.setattr(heldout, "CUBINS", cubins)
    for d in (data, cubins / "5", bin_):
        d.mkdir(parents=True)
    pred = {k: 100 for k in heldout.NCU}
    ks = [{"id": f"gemm-{i}", "op": "gemm", "shape": {"M": 8, "N": 8, "K": 8}, "knobs": "tile_m=8",
           "remainder": False, "predicted": dict(pred), "sass_hash": "x", "launches": [{"name": "main_kernel"}]}
          for i in range(2)]
    (data / "batch-5.json").write_text(json.dumps({"seed": 5, "drawn": "2026-12-05T00:00:00+00:00",
                                                   "command": "python -m bench.heldout draw", "kernels": ks,
                                                   "measured": None}))
    (cubins / "5" / "gemm-0.cubin").write_bytes(b"x")
    heldout._pack(cubins / "5")
    (cubins / "5" / "gemm-0.cubin").unlink()
    (cubins / "5").rmdir()
    log = _ncu_csv([{m: 100 for m in heldout.NCU.values()}] * 2, {"launched": 2, "skipped": {}, "hash_mismatches": []})
    (tmp_path / "log.csv").write_text(log)
    (bin_ / "ncu").write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/ncu-args\ncat {tmp_path}/log.csv\n")
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    heldout.profile([5], str(out))
    assert (cubins / "5" / "gemm-0.cubin").exists()                    # unpacked from the carried tarball
    args = (tmp_path / "ncu-args").read_text().split()
    assert args[:3] == ["--clock-control", "none", "--kernel-name"] and args[-3] == "launch"
    assert args[-2].endswith("data/batch-5.json") and args[-1].endswith("cubins/5")
    assert [p.name for p in out.iterdir()] == ["profile.tar.gz"]       # one file: the GPU machine returns 8 at most
    files = tmp_path / "files"
    files.mkdir()
    subprocess.run(["tar", "-xzf", str(out / "profile.tar.gz"), "-C", str(files)], check=True)
    assert {"gpu.txt", "ncu-5.csv", "faults-5.json", "date-5.txt"} <= {p.name for p in files.iterdir()}
    assert json.loads((files / "faults-5.json").read_text()) == {}     # none predicted to fault
    import tempfile
    before = set(Path(tempfile.gettempdir()).glob("profiled-*"))
    heldout.judge_profiled(str(out))
    assert set(Path(tempfile.gettempdir()).glob("profiled-*")) == before      # its unpacked copy removed
    assert [p.name for p in out.iterdir()] == ["profile.tar.gz"]
    b = json.loads((data / "batch-5.json").read_text())
    assert b["measured"]["device"] == "NVIDIA H100 80GB HBM3" and b["summary"]["agree"] == 2
    assert b["measured"]["date"] == (files / "date-5.txt").read_text().strip()
    assert b["measured"]["command"].startswith("python3 -m bench.heldout profile 5 (under it: ncu --clock-control")
    assert gzip.decompress((data / "ncu-5.csv.gz").read_bytes()).decode() == log
    with pytest.raises(SystemExit, match="judged once"):
        heldout.profile([5], str(out))
    with pytest.raises(SystemExit, match="holds no batch profiled"):
        heldout.judge_profiled(str(tmp_path / "bin"))


def _fake_gpu(monkeypatch, frames: dict) -> list:
    """cupy and the toolchain as `launch` uses them, on an H100's 132 SMs with 78.5 GiB free; a cubin's text is
    its kernel's id and its frame size is frames[id]. Returns the list the launched kernels' ids go to."""
    import sys
    import types
    from bench import heldout
    launched = []

    class Fn:
        def __init__(self, name):
            self.name = name

        def __call__(self, grid, block, args):
            launched.append(self.name)

    class Module:
        def __init__(self, code=None, path=""):
            self.id = Path(path).stem

        def get_function(self, name):
            return Fn(self.id)

    class Device:
        attributes = {"MaxThreadsPerMultiProcessor": 2048, "MultiProcessorCount": 132}

        def synchronize(self):
            pass
    cp = types.SimpleNamespace(RawModule=Module, float32="float32", zeros=lambda n, dtype: None,
                               cuda=types.SimpleNamespace(Device=Device, driver=types.SimpleNamespace(
                                   CUDADriverError=RuntimeError), runtime=types.SimpleNamespace(
                                   memGetInfo=lambda: (int(78.5 * 2**30), 80 * 2**30))))
    monkeypatch.setitem(sys.modules, "cupy", cp)
    from kernels.sass.toolchain import frame_problem
    tc = types.SimpleNamespace(frame_problem=frame_problem, sass_hash=lambda blob: blob.decode(),
                               local_bytes=lambda blob: frames[blob.decode()])
    monkeypatch.setattr(heldout, "_toolchain", lambda: tc)
    return launched


def _cubins(tmp_path, frames: dict, errors: dict | None = None) -> Path:
    """A batch of one-launch kernels named by frames' keys (with errors[id] as the emulator's), and their cubins."""
    ks = [{"id": i, "op": "conv1d", "sass_hash": i, "launches": [{"name": "main_kernel", "grid": [1, 1, 1],
           "block": [16, 1, 1], "params": [["A_ptr", 8, 64]]}], **({"error": errors[i]} if i in (errors or {}) else {})}
          for i in frames]
    for i in frames:
        (tmp_path / f"{i}.cubin").write_text(i)
    b = tmp_path / "batch.json"
    b.write_text(json.dumps({"kernels": ks}))
    return b


def test_launch_skips_a_kernel_whose_frame_for_every_resident_thread_exceeds_the_free_memory(tmp_path, monkeypatch,
                                                                                            capsys):
    """Batch 1481437295 on an H100: conv1d-38's 361,776-byte frame, reserved for the 2048 x 132 threads its SMs can
    hold, is 91 GiB, over the 78.5 GiB free; its launch failed and took the process with it. launch now skips it in
    its report, and launches conv1d-9 (266,288 bytes: 67 GiB, which ran)."""
    from bench import heldout
    frames = {"conv1d-9": 266288, "conv1d-38": 361776}
    launched = _fake_gpu(monkeypatch, frames)
    b = _cubins(tmp_path, frames)
    heldout.launch(str(b), str(tmp_path))
    report = heldout.launch_report(capsys.readouterr().out)
    assert launched == ["conv1d-9"]
    assert report["launched"] == 1 and list(report["skipped"]) == ["conv1d-38"]
    assert report["skipped"]["conv1d-38"] == ("353 KB of local memory per thread, 91.1 GiB for the 270336 threads "
                                              "the GPU's SMs can hold, over the 78.5 GiB free")


def test_a_kernel_predicted_to_fault_is_launched_alone_and_judged_by_whether_the_gpu_stopped_it(tmp_path,
                                                                                                monkeypatch, capsys):
    """Batch 3706999825's gemm-27: the emulator predicts 'misaligned address' (a 128-bit cp.async into shared rows
    of one float). A fault ends the process that launched it, so `launch` sets such a kernel apart and `faults`
    launches each alone; `judge` counts it as agreeing where the GPU stopped it, and refuses to judge without
    that record."""
    from bench import heldout
    frames = {"gemm-0": 0, "gemm-1": 0, "gemm-2": 0}
    errors = {i: "Misaligned: main_kernel, instruction /*1ed0*/ LDGSTS.E.BYPASS.128 ..." for i in ("gemm-1", "gemm-2")}
    launched = _fake_gpu(monkeypatch, frames)
    b = _cubins(tmp_path, frames, errors)
    heldout.launch(str(b), str(tmp_path))
    report = heldout.launch_report(capsys.readouterr().out)
    assert launched == ["gemm-0"] and report["apart"] == ["gemm-1", "gemm-2"] and report["launched"] == 1
    heldout.launch(str(b), str(tmp_path), only="gemm-1")
    assert launched == ["gemm-0", "gemm-1"]
    doc = json.loads(b.read_text())
    pred = {k: 100 for k in heldout.NCU}
    doc.update(seed=7, drawn="2026-12-06T00:00:00+00:00", measured=None)
    for e in doc["kernels"]:
        e.update(op="gemm", remainder=False, predicted=None if e["id"] in errors else dict(pred))
    batch = tmp_path / "batch-7.json"
    batch.write_text(json.dumps(doc))
    csv = tmp_path / "ncu.csv"
    csv.write_text(_ncu_csv([{m: 100 for m in heldout.NCU.values()}], report))
    with pytest.raises(SystemExit, match="gemm-1, gemm-2 predicted to fault.*--faults"):
        heldout.judge(str(batch), str(csv), "NVIDIA H100 80GB HBM3", "cmd")
    ran = tmp_path / "faults.json"
    ran.write_text(json.dumps({"gemm-1": {"rc": 1, "faulted": True, "said": heldout.FAULT},
                               "gemm-2": {"rc": 0, "faulted": False, "said": ""}}))
    heldout.judge(str(batch), str(csv), "NVIDIA H100 80GB HBM3", "cmd", "2026-12-07T00:00:00+00:00", str(ran))
    out = json.loads(batch.read_text())
    assert [e["agrees"] for e in out["kernels"]] == [True, True, False]
    assert out["summary"]["faults_predicted"] == [1, 2] and out["summary"]["emulator_errors"] == 0
    assert out["measured"]["faults"]["gemm-1"]["faulted"] and out["summary"]["agree"] == 2


def test_faults_launches_each_predicted_fault_in_a_process_of_its_own(tmp_path, monkeypatch, capsys):
    import subprocess
    from bench import heldout
    b = _cubins(tmp_path, {"gemm-0": 0, "gemm-1": 0, "gemm-2": 0},
                {"gemm-1": "Misaligned: ...", "gemm-2": "EmulationError: ..."})
    calls = []

    def run(cmd, **kw):
        calls.append(cmd[-1])
        return subprocess.CompletedProcess(cmd, 1, "", "launching gemm-1\ncupy_backends.cuda.api.driver."
                                           f"CUDADriverError: {heldout.FAULT}: misaligned address\n")
    monkeypatch.setattr(heldout.subprocess, "run", run)
    heldout.faults(str(b), str(tmp_path))
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert calls == ["gemm-1"] and out["gemm-1"]["faulted"] and out["gemm-1"]["said"].endswith("misaligned address")


def test_judge_refuses_a_log_whose_launch_did_not_finish(tmp_path):
    from bench import heldout
    b = tmp_path / "batch-6.json"
    b.write_text(json.dumps({"seed": 6, "kernels": [], "measured": None}))
    csv = tmp_path / "ncu.csv"
    csv.write_text("==PROF== Connected to process 1\n")
    with pytest.raises(SystemExit, match="did not finish"):
        heldout.judge(str(b), str(csv), "NVIDIA H100 80GB HBM3", "cmd")
    assert json.loads(b.read_text())["measured"] is None


def test_a_kernel_whose_local_frame_the_driver_cannot_launch_is_refused_in_one_sentence():
    """Batch 843420274's conv1d-7: TVM sized the cached A (local) to the whole signal, a 514 KB frame per thread,
    over sm_90's 512 KB; the GPU refused its launch. The compile step now says so before anything runs."""
    from kernels import sass
    from kernels.knobs import resolve
    from kernels.sass.toolchain import LOCAL_LIMIT, ToolchainError, local_bytes
    s = {"M": 131072, "N": 256}
    text = ("tile=64,patch=32,k_split=128,cache_a=local,cache_w=shared,cache_c=local,vector=1,unroll=256,"
            "k_threads=1,min_blocks=0")
    k = resolve("conv1d", "cuda", s, None, text)
    try:
        sass.compiled("conv1d", s, k)
    except ToolchainError as e:
        msg = str(e)
    else:
        raise AssertionError("a kernel the driver cannot launch was compiled without a word")
    assert msg.startswith("The kernel needs 514 KB of local memory per thread, over the 512 KB") and "\n" not in msg
    assert "leave that input in 'global'" in msg
    s = {"M": 4096, "N": 256}                           # the same knobs where the tile divides: a small frame
    assert 0 <= local_bytes(sass.compiled("conv1d", s, resolve("conv1d", "cuda", s, None, text)).cubin) < LOCAL_LIMIT


def test_drawing_a_batch_again_rebuilds_its_cubins_and_leaves_the_batch(tmp_path, monkeypatch, capsys):
    """The cubins live outside git: the next GPU session rebuilds them with the batch's seed, checked against the
    SASS hashes recorded when it was drawn, and the committed predictions are never overwritten."""
    from bench import heldout
    monkeypatch.setattr(heldout, "DATA", tmp_path / "data")
    monkeypatch.setattr(heldout, "CUBINS", tmp_path / "cubins")
    path = heldout.draw(1, 7, 1)
    first = json.loads(path.read_text())
    assert len(first["kernels"]) == 4 and all((tmp_path / "cubins" / "7" / f"{e['id']}.cubin").exists()
                                              for e in first["kernels"])
    import tarfile
    with tarfile.open(tmp_path / "cubins" / "7.tar.xz") as tar:     # packed to travel with the TVM bundle
        assert sorted(tar.getnames())[1:] == sorted(f"cubins/7/{e['id']}.cubin" for e in first["kernels"])
    for cubin in (tmp_path / "cubins" / "7").iterdir():
        cubin.unlink()
    heldout.draw(1, 7, 1)                                   # compiled again, not emulated
    assert json.loads(path.read_text()) == first
    assert "4 of 4 SASS hashes equal" in capsys.readouterr().out
    assert len(list((tmp_path / "cubins" / "7").iterdir())) == 4
    first["kernels"][0]["sass_hash"] = "0" * 64            # a batch drawn by another engine: said, not rewritten
    path.write_text(json.dumps(first))
    heldout.draw(1, 7, 1)
    assert f"1 of 4 differ from the batch ({first['kernels'][0]['id']})" in capsys.readouterr().out
    assert json.loads(path.read_text()) == first


def test_a_restricted_draw_keeps_its_fixed_knobs_and_predicts_by_another_rule_too(tmp_path, monkeypatch):
    """A batch drawn to judge one rule: random settings of one operator that all keep the knobs named in --fix,
    each kernel predicted twice (the emulator's rules, and another beside it), the command recorded so the
    cubins can be rebuilt; its summary says which of the two the GPU's counts agree with."""
    from bench import heldout
    monkeypatch.setattr(heldout, "DATA", tmp_path / "data")
    monkeypatch.setattr(heldout, "CUBINS", tmp_path / "cubins")
    fix = "async_copy=true,vector=4,interleave=true,cache_a=shared"
    b = json.loads(heldout.draw(2, 11, 1, ("gemm",), fix, "copy_rule=global").read_text())
    assert b["command"] == f"python -m bench.heldout draw --per-op 2 --seed 11 --ops gemm --fix {fix} " \
                           "--compare copy_rule=global"
    assert [e["op"] for e in b["kernels"]] == ["gemm", "gemm"] and not any(e["preset"] for e in b["kernels"])
    for e in b["kernels"]:
        assert all(item in e["knobs"].split(",") for item in fix.split(","))
        assert e["other_rule"]["rule"] == "copy_rule=global"
    assert any(e["other_rule"]["predicted"]["sectors"] != e["predicted"]["sectors"] for e in b["kernels"])  # reached
    assert all({k: v for k, v in e["other_rule"]["predicted"].items() if k != "sectors"} ==
               {k: v for k, v in e["predicted"].items() if k != "sectors"} for e in b["kernels"])
    e = b["kernels"][0]
    less = {**e["predicted"], "sectors": e["predicted"]["sectors"] - 32}
    alt = {**e, "other_rule": {"rule": "bsync_tokens=false", "predicted": less}, "measured": less, "agrees": False}
    same = {**b["kernels"][1], "measured": dict(b["kernels"][1]["predicted"]), "agrees": True,
            "other_rule": {"rule": "bsync_tokens=false", "predicted": b["kernels"][1]["predicted"]}}
    assert heldout.summary({"kernels": [alt, same]})["compared"] == \
        {"other": "bsync_tokens=false", "changes": 1, "with_rule": 0, "with_other": 1}
    legacy = {k: v for k, v in alt.items() if k != "other_rule"} | {"without_copy_rule": {"sectors": 1}}
    assert heldout.summary({"kernels": [legacy]})["compared"] == \
        {"other": "copy_rule=global", "changes": 1, "with_rule": 0, "with_other": 0}     # the ninth batch's field
    assert "compared" not in heldout.summary({"kernels": [{k: v for k, v in same.items() if k != "other_rule"}]})
    with pytest.raises(SystemExit, match="one operator"):
        heldout.fixed_knobs(("gemm", "conv1d"), "vector=4")
    with pytest.raises(SystemExit, match="not a knob of gemm"):
        heldout.fixed_knobs(("gemm",), "vectr=4")
    for argv in (["draw", "--ops", "gem"], ["draw", "--ops", "gemm", "--fix", "vectr=4"]):
        with pytest.raises(SystemExit) as bad:      # the command line: one sentence, status 2, no seed drawn
            heldout.main(argv)
        assert bad.value.code == 2


def test_a_draw_filtered_by_its_sass_keeps_only_matching_kernels_and_says_how_many_it_drew(tmp_path, monkeypatch):
    """draw --sass: random settings as ever, kept only where the compiled SASS matches (to reach a rule that only
    some machine code exercises, e.g. BRA.U); ids count every kernel drawn, the batch records how many were, and
    a pattern that no kernel matches stops the draw with a sentence instead of drawing for ever. --sizes narrows
    a dimension's range (BRA.U over lanes that disagree needs M within one tile)."""
    from bench import heldout
    from kernels import sass
    from kernels.knobs import resolve
    monkeypatch.setattr(heldout, "DATA", tmp_path / "data")
    monkeypatch.setattr(heldout, "CUBINS", tmp_path / "cubins")
    fix = "cache_a=global,cache_b=global,vector=1"
    b = json.loads(heldout.draw(2, 5, 1, ("gemm",), fix, None, r"IMAD\.WIDE", "M=33-127").read_text())
    assert b["command"].endswith(rf"--fix {fix} --sizes M=33-127 --sass 'IMAD\.WIDE'")
    assert all(33 <= e["shape"]["M"] <= 127 for e in b["kernels"])
    assert len(b["kernels"]) == 2 and b["candidates"]["gemm"] >= 2
    ids = [int(e["id"].split("-")[1]) for e in b["kernels"]]
    assert ids == sorted(ids) and ids[-1] < b["candidates"]["gemm"]
    for e in b["kernels"]:
        c = sass.compiled("gemm", e["shape"], resolve("gemm", "cuda", e["shape"], None, e["knobs"]))
        assert "IMAD.WIDE" in c.listing and c.sass_hash == e["sass_hash"] and "predicted" in e
    monkeypatch.setattr(heldout, "SASS_TRIES", 1)
    with pytest.raises(SystemExit, match="Only 0 of 2 gemm kernels drawn have SASS matching 'NO_SUCH_OPCODE'"):
        heldout.draw(1, 6, 1, ("gemm",), fix, None, "NO_SUCH_OPCODE")
    for argv in (["--sass", "BRA.("], ["--sizes", "M=127-33"], ["--sizes", "Q=1-9"]):
        with pytest.raises(SystemExit) as bad:
            heldout.main(["draw", "--ops", "gemm", *argv])
        assert bad.value.code == 2
    with pytest.raises(SystemExit, match="one operator"):
        heldout.parse_sizes(("gemm", "conv1d"), "M=1-9")


def test_a_draw_that_keeps_only_kernels_two_rules_predict_apart(tmp_path, monkeypatch, capsys):
    """draw --differ (with --compare): random settings as ever, each predicted by today's rule and the other, kept
    only where the two differ on some counter, so that every kernel of the batch judges the rule; its cubin folder
    holds the kept kernels alone, a rebuild for launch keeps the same ones without emulating, and a setting where
    the rules cannot differ stops with a sentence. --sizes applies to N and K of a vectorized GEMM too (in
    multiples of the vector)."""
    from bench import heldout
    monkeypatch.setattr(heldout, "DATA", tmp_path / "data")
    monkeypatch.setattr(heldout, "CUBINS", tmp_path / "cubins")
    fix, sizes = "async_copy=true,vector=4,interleave=true", "M=16-64,N=16-64,K=16-64"
    path = heldout.draw(1, 7, 1, ("gemm",), fix, "copy_rule=global", None, sizes, True)
    b = json.loads(path.read_text())
    assert b["command"].endswith(f"--sizes {sizes} --compare copy_rule=global --differ")
    (e,) = b["kernels"]
    assert e["other_rule"]["predicted"] != e["predicted"] and b["candidates"]["gemm"] >= 1
    assert all(16 <= e["shape"][d] <= 64 for d in "MNK") and e["shape"]["N"] % 4 == e["shape"]["K"] % 4 == 0
    folder = tmp_path / "cubins" / "7"
    assert sorted(x.name for x in folder.iterdir()) == [f"{e['id']}.cubin"]
    capsys.readouterr()
    heldout.draw(1, 7, 1, ("gemm",), fix, "copy_rule=global", None, sizes, True)     # rebuilt for launch
    assert "1 of 1 SASS hashes equal" in capsys.readouterr().out and json.loads(path.read_text()) == b
    assert sorted(x.name for x in folder.iterdir()) == [f"{e['id']}.cubin"]
    monkeypatch.setattr(heldout, "SASS_TRIES", 1)
    with pytest.raises(SystemExit, match="Only 0 of 2 gemm kernels drawn are predicted apart by copy_rule=global"):
        heldout.draw(1, 8, 1, ("gemm",), "async_copy=false,vector=4", "copy_rule=global", None, sizes, True)
    with pytest.raises(SystemExit, match="name the other with --compare"):
        heldout.draw(1, 9, 1, ("gemm",), fix, None, None, None, True)
    with pytest.raises(SystemExit, match="holds no multiple of 4"):
        heldout.draw(1, 10, 1, ("gemm",), fix, None, None, "N=5-7")
    for argv in (["--differ"], ["--fix", "vector=4", "--sizes", "N=5-7"]):
        with pytest.raises(SystemExit) as bad:
            heldout.main(["draw", "--ops", "gemm", *argv])
        assert bad.value.code == 2


def test_a_kernel_the_other_rule_cannot_predict_is_kept_by_differ_and_counted_apart(tmp_path):
    """--compare spill_slots=false (every spill slot forgotten at a local array's store, the rule before the
    sixteenth batch) mostly cannot predict the kernels where the rules part: held-out dwsep_conv2d-20 (batch
    1138477905) branches on a spilled predicate. draw --differ keeps such a kernel, its other prediction is the
    sentence why not, and the judgement counts it as one the other rule could not predict."""
    from bench import heldout
    knobs = ("tile_b=1,tile_f=2,tile_h=14,tile_w=21,patch_b=1,patch_f=1,patch_h=2,patch_w=21,c_split=1,"
             "d_kernel=false,cache_d=local,cache_p=shared,cache_c=global,vector=1,unroll=512")
    entry = {"id": "dwsep_conv2d-20", "op": "dwsep_conv2d", "shape": {"B": 1, "C": 65, "H": 15, "W": 21, "K": 5,
             "F": 23}, "knobs": knobs, "other_rule": "spill_slots=false"}
    e = heldout._predict((entry, str(tmp_path), True, None, True))
    assert "unmatched" not in e and "error" not in e and (tmp_path / "dwsep_conv2d-20.cubin").exists()
    assert e["other_rule"]["rule"] == "spill_slots=false" and "predicted" not in e["other_rule"]
    assert "loaded from local memory" in e["other_rule"]["error"]
    judged = {**e, "measured": dict(e["predicted"]), "agrees": True, "remainder": True}
    assert heldout.summary({"kernels": [judged]})["compared"] == \
        {"other": "spill_slots=false", "changes": 1, "with_rule": 1, "with_other": 0, "other_failed": 1}
    same = heldout._predict(({**entry, "shape": {**entry["shape"], "K": 3}}, str(tmp_path), True, None, True))
    assert same.get("unmatched") and not (tmp_path / "dwsep_conv2d-20.cubin").exists()   # both rules predict it


def test_split_k_workspace_is_placed_with_its_size_and_the_launch_bound_covers_it():
    """C_rf (split-K's partial sums) is allocated by the schedule, not the TE graph: the emulator's launches give
    its pointer the buffer's bytes (a batch drawn before recorded 0, and the GPU launch wrote out of bounds), and
    bench.heldout's bound for such batches is at least the allocation, with pad_tiles and without."""
    from bench.heldout import _workspace_bound
    from kernels import traffic
    from kernels.knobs import resolve
    from kernels.sass.launch import workspaces
    for shape, pad in (({"M": 75, "N": 43, "K": 301}, "true"), ({"M": 75, "N": 43, "K": 301}, "false"),
                       ({"M": 64, "N": 64, "K": 256}, "false")):
        knobs = f"tile_m=16,tile_n=32,patch_m=2,patch_n=2,k_split=8,vector=1,pad_tiles={pad},k_blocks=4"
        ws = workspaces(traffic.lowered("gemm", shape, resolve("gemm", "cuda", shape, None, knobs), "cuda"))
        (name, dims), = ws.items()
        assert name.endswith("_rf") and dims[0] >= 4 * shape["M"] * shape["N"]
        entry = {"id": "gemm-x", "op": "gemm", "shape": shape, "knobs": knobs}
        assert 4 * dims[0] <= _workspace_bound(entry) <= 4 * 4 * 80 * 64


def test_a_drawn_kernel_whose_emulation_runs_past_the_limit_is_a_miss_on_record(tmp_path, monkeypatch):
    import time as _time
    from bench import heldout
    from kernels import sass
    monkeypatch.setattr(heldout, "PREDICT_LIMIT_S", 1)
    monkeypatch.setattr(sass, "machine_counts", lambda *a, **k: _time.sleep(5))
    entry = {"id": "gemm-0", "op": "gemm", "shape": {"M": 64, "N": 64, "K": 64},
             "knobs": "tile_m=32,tile_n=32,patch_m=4,patch_n=4"}
    t0 = _time.perf_counter()
    e = heldout._predict((entry, str(tmp_path), True, None))
    assert _time.perf_counter() - t0 < 5 and "predicted" not in e and e["sass_hash"]
    assert e["error"].startswith("TimeoutError: the emulation did not finish in")


def test_a_drawn_kernel_whose_emulation_needs_too_much_memory_is_a_miss_on_record(tmp_path, monkeypatch):
    """A worker the system kills for memory leaves the draw's pool waiting for ever; the limit turns it into a
    MemoryError, recorded, and the worker's limit is restored after."""
    import resource
    import numpy as np
    from bench import heldout
    from kernels import sass
    monkeypatch.setattr(heldout, "PREDICT_MEMORY", 1 << 30)
    monkeypatch.setattr(sass, "machine_counts", lambda *a, **k: np.ones(1 << 31))      # 16 GB of float64
    before = resource.getrlimit(resource.RLIMIT_AS)
    entry = {"id": "gemm-0", "op": "gemm", "shape": {"M": 64, "N": 64, "K": 64},
             "knobs": "tile_m=32,tile_n=32,patch_m=4,patch_n=4"}
    e = heldout._predict((entry, str(tmp_path), True, None))
    assert e["error"] == "MemoryError: the emulation needed more than 1 GB" and "predicted" not in e
    assert resource.getrlimit(resource.RLIMIT_AS) == before
