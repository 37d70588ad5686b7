"""The command line: `list`, `run`, `source` print what DESIGN.md promises; bad input is one 'error:' line, status 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels import results
from kernels.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernels", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


def test_list_json_names_operators_presets_targets_knobs():
    p = cli("list", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert set(info["operators"]) == {"gemm", "conv1d", "dwconv2d", "dwsep_conv2d"}
    assert info["presets"] == ["baseline", "naive", "seed", "best"]
    assert info["targets"]["cpu"] == "available"
    assert "tile_m" in info["knobs"]["gemm/cpu"]


def test_run_json_reports_timing_error_and_reference_ratio(tmp_path):
    db = tmp_path / "runs.sqlite"
    p = cli("run", "--op", "conv1d", "--shape", "M=100,N=7", "--target", "cpu", "--preset", "best", "--repeat", "2",
            "--json", "--record", env={results.ENV: str(db)})
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    for key in ("op", "shape", "target", "device", "knobs", "median_ms", "gflops", "gbps", "rel_err", "ok", "vs_ref",
                "ref_ms"):
        assert key in r, key
    assert r["op"] == "conv1d" and r["shape"] == {"M": 100, "N": 7} and r["target"] == "cpu"
    assert r["ok"] is True and r["rel_err"] < 1e-4
    assert r["median_ms"] > 0 and r["ref_ms"] > 0 and r["vs_ref"] == pytest.approx(r["ref_ms"] / r["median_ms"])
    assert "vector=" in r["knobs"]
    rows = results.load(db)                     # --record stored the same run
    assert len(rows) == 1 and rows.iloc[0]["op"] == "conv1d" and rows.iloc[0]["preset"] == "best"


def test_source_tir_is_the_scheduled_tensorir():
    p = cli("source", "--op", "gemm", "--shape", "M=16,N=16,K=16", "--target", "cpu", "--preset", "seed", "--ir", "tir")
    assert p.returncode == 0, p.stderr
    assert "T.prim_func" in p.stdout and 'T.sblock("C' in p.stdout


def test_source_llvm_is_avx_assembly():
    p = cli("source", "--op", "conv1d", "--shape", "M=64,N=8", "--target", "cpu", "--preset", "best", "--ir", "llvm")
    assert p.returncode == 0, p.stderr
    assert "vfmadd" in p.stdout and ("zmm" in p.stdout or "ymm" in p.stdout)


BAD = {
    "unknown operator": ["run", "--op", "matmul", "--shape", "M=1"],
    "shape not an integer": ["run", "--op", "gemm", "--shape", "M=1,N=x,K=2"],
    "shape not positive": ["run", "--op", "gemm", "--shape", "M=0,N=1,K=2"],
    "shape missing a dimension": ["run", "--op", "gemm", "--shape", "M=1,N=1"],
    "even kernel": ["source", "--op", "dwconv2d", "--shape", "B=1,C=1,H=4,W=4,K=2"],
    "unknown knob": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--knobs", "speed=3"],
    "knob not an integer": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--knobs", "tile_m=big"],
    "tile larger than the axis": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--knobs", "tile_m=16"],
    "over a device limit": ["source", "--op", "gemm", "--shape", "M=1024,N=1024,K=1024", "--target", "cuda",
                            "--knobs", "tile_m=64,tile_n=64,patch_m=1,patch_n=1,vector=1"],
    "unknown target": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--target", "tpu"],
    "unknown preset": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--preset", "fastest"],
    "ir not for the target": ["source", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--ir", "cuda"],
    "repeat below one": ["run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--repeat", "0"],
    "missing --op": ["run", "--shape", "M=8,N=8,K=8"],
    "unknown command": ["bench"],
}


@pytest.mark.parametrize("args", list(BAD.values()), ids=list(BAD))
def test_bad_input_exits_2_with_one_error_line(args, capfd):
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capfd.readouterr()
    assert e.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert out == ""


def test_usage_error_points_at_the_right_help(capfd):
    with pytest.raises(SystemExit):
        main(["bench"])
    assert capfd.readouterr().err.strip().endswith("see python -m kernels --help.")
    with pytest.raises(SystemExit):
        main(["run", "--shape", "M=8,N=8,K=8"])
    assert capfd.readouterr().err.strip().endswith("see python -m kernels run --help.")


def test_bad_input_through_the_real_entry_point():
    p = cli("run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--knobs", "tile_m=16")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["error: tile_m=16 is larger than M=8; use at most 8."]
    assert "Traceback" not in p.stderr


def test_cuda_run_without_gpu_says_so():
    from kernels.build import target_available
    if target_available("cuda") is None:
        pytest.skip("this machine has a GPU")
    p = cli("run", "--op", "gemm", "--shape", "M=8,N=8,K=8", "--target", "cuda")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert p.stderr.startswith("error: This machine has no CUDA GPU")
