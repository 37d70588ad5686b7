"""bench.anchors: the held-out shape draw, and the side-by-side run on this machine's CPU."""
from __future__ import annotations

import pytest

from bench import anchors
from bench.shapes import BENCH_ROWS
from kernels.knobs import parse_shape
from kernels.tune import shipped_rows


def test_the_held_out_draw_is_fixed_by_its_seed_varied_and_never_a_benchmark_row():
    a = anchors.suite_shapes(anchors.OPS, 20, 12345)
    assert a == anchors.suite_shapes(anchors.OPS, 20, 12345)
    assert a != anchors.suite_shapes(anchors.OPS, 20, 12346)
    bench = [(o, s) for o, s, _ in BENCH_ROWS]
    for op in anchors.OPS:
        mine = [s for o, s in a if o == op]
        assert len(mine) == 20 and len({tuple(s.items()) for s in mine}) == 20
        assert not [s for s in mine if (op, s) in bench]
        for s in mine:
            assert parse_shape(op, ",".join(f"{k}={v}" for k, v in s.items())) == s   # within the shape guards
    gemm = [s for o, s in a if o == "gemm"]
    assert any(s["K"] % 64 for s in gemm) and any(s["K"] % 64 == 0 for s in gemm)   # ragged and round sizes
    assert all(64 <= s[d] <= 8192 for s in gemm for d in "MNK")
    tuned = [(r["op"], r["shape"]) for _, _, r in shipped_rows()]
    assert not [x for x in a if x in tuned]
    # the depthwise draw of data/h100_suite_5.json met a shape tuned in data/h100_suite.json; it is drawn no more
    seen = anchors.suite_shapes(["dwconv2d"], 20, 796543891)
    assert ("dwconv2d", {"B": 4, "C": 16, "H": 28, "W": 28, "K": 5}) not in seen


def test_side_by_side_on_the_cpu_verifies_and_times_ours_against_numpy():
    row = anchors.side("gemm", {"M": 40, "N": 24, "K": 56}, "cpu", 4, seed=3, with_ms=False)
    assert row["vendor"].startswith("numpy") and row["vendor_ms"] > 0 and row["vendor_ms_after"] > 0
    ours = row["ours"]
    assert ours["ok"] and ours["rel_err"] < 1e-4 and ours["median_ms"] > 0 and ours["trials"] == 4
    assert ours["vs_vendor"] == pytest.approx(min(row["vendor_ms"], row["vendor_ms_after"]) / ours["median_ms"],
                                              rel=1e-3)
    assert "dlight" not in row and "metaschedule" not in row


@pytest.mark.slow
def test_metaschedule_runs_with_the_same_trial_budget_and_is_timed_like_ours():
    row = anchors.side("gemm", {"M": 48, "N": 40, "K": 32}, "cpu", 4, seed=1, with_ms=True)
    ms = row["metaschedule"]
    assert "error" not in ms, ms
    assert ms["ok"] and ms["rel_err"] < 1e-4 and ms["median_ms"] > 0 and ms["cost_model"] in anchors.MS_COST_MODELS


def test_metaschedule_failures_are_reported_with_the_first_message_in_full(tmp_path):
    """The GPU runs recorded only "Error in building:" lines: the message that follows them is what says why."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "task.log").write_text(
        "2026-12-05 15:29:05 [INFO] [task_scheduler.cc:134] [Task #0: main] Trial #1: Error in building:\n"
        "Traceback (most recent call last):\n  File \"nvcc.py\", line 9\nRuntimeError: cuda-python is not installed\n"
        "2026-12-05 15:29:05 [INFO] [task_scheduler.cc:134] [Task #0: main] Trial #2: Error in building:\n"
        "RuntimeError: cuda-python is not installed\n"
        "2026-12-05 15:29:52 [INFO] [task_scheduler.cc:216] Build errors: 16 sample(s)\n")
    tail = anchors._log_tail(str(tmp_path))
    assert tail.startswith("Traceback (most recent call last): File \"nvcc.py\", line 9 RuntimeError: cuda-python")
    assert tail.endswith("Build errors: 16 sample(s)")


def test_metaschedule_builds_cuda_candidates_with_the_pinned_compiler():
    """Its builder's worker processes run kernels' NVRTC callback (importable from the repository's root), so a
    candidate is compiled as every kernel here is; a CPU target keeps MetaSchedule's own builder."""
    from kernels.sass.toolchain import install_tvm_callback
    assert anchors.ms_builder("cpu") == "local"
    b = anchors.ms_builder("cuda")
    assert type(b).__name__ == "LocalBuilder" and b.initializer is install_tvm_callback


@pytest.mark.slow
def test_metaschedule_cuda_builder_builds_a_candidate_of_its_own_space():
    """(Here no GPU: TVM keeps the CUDA source; on the GPU machine the worker's callback compiles it.)"""
    from tvm.s_tir import meta_schedule as ms
    from kernels.schedules import unscheduled
    mod, tgt = unscheduled("gemm", {"M": 64, "N": 64, "K": 64}).mod, anchors.ms_target("cuda")
    ctx = ms.TuneContext(mod=mod, target=tgt, space_generator="post-order-apply", search_strategy="replay-trace",
                         task_name="gemm", rand_state=1)
    b = anchors.ms_builder("cuda")
    got = b.build([ms.builder.BuilderInput(ctx.generate_design_space()[0].mod, tgt)])
    assert got[0].error_msg is None and got[0].artifact_path.endswith(".tar")


def test_a_suite_runs_the_slice_of_its_draw_that_first_and_count_name(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(anchors, "side", lambda op, s, *a, **k: ran.append((op, s)) or {"op": op, "shape": s})
    draw = anchors.suite_shapes(["gemm", "conv1d"], 3, 777)
    assert anchors.main(["suite", "--ops", "gemm,conv1d", "--per-op", "3", "--seed", "777", "--no-ms",
                         "--first", "2", "--count", "3"]) == 0
    assert ran == draw[2:5]
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert [ln.count('"index"') for ln in lines] == [1, 1, 1]
    assert '"index": 2' in lines[0] and '"index": 4' in lines[-1]


def test_two_kernels_joined_through_d_are_verified_and_timed_as_the_depthwise_separable_operator():
    """How MetaSchedule's depthwise-separable kernel is measured on the GPU: its depthwise and pointwise kernels
    (two functions, each tuned alone) called back to back through D, verified against the float64 reference of
    the whole operator and timed like any module. Here with the two functions compiled unscheduled for the CPU."""
    import tvm
    from kernels import build
    from kernels.schedules import unscheduled
    s = {"B": 2, "C": 6, "H": 9, "W": 7, "K": 3, "F": 5}
    dw = tvm.compile(unscheduled("dwconv2d", {k: s[k] for k in "BCHWK"}).mod, target="llvm")
    pw = tvm.compile(anchors.pointwise_mod(s), target="llvm")
    got = anchors.timed("dwsep_conv2d", s, anchors.TwoStages(dw, pw, s, build._tvm_dev("cpu")), "cpu", repeat=3)
    assert got["ok"] and got["rel_err"] < 1e-5 and got["median_ms"] > 0
    wrong = anchors.TwoStages(dw, dw, s, build._tvm_dev("cpu"))       # the depthwise kernel where the pointwise goes
    with pytest.raises(Exception):          # a stage of the wrong shape is an error, not a kernel that agrees
        anchors.timed("dwsep_conv2d", s, wrong, "cpu", repeat=1)


@pytest.mark.slow
def test_metaschedule_tunes_the_depthwise_separable_operator_as_two_functions():
    row = anchors.metaschedule_two_stages({"B": 1, "C": 4, "H": 8, "W": 8, "K": 3, "F": 4}, "cpu", 4, seed=1)
    assert "error" not in row, row
    assert row["ok"] and row["rel_err"] < 1e-4 and set(row["stages"]) == {"depthwise", "pointwise"}
    assert [st["trials"] for st in row["stages"].values()] == [2, 2]


def test_the_wake_comparison_times_both_sides_cold_and_woken_after_the_pause(monkeypatch):
    """bench.variants wake: after each pause, a repeat of each side with and without an untimed call first."""
    from bench import variants
    from kernels import build
    monkeypatch.setattr(build, "SETTLE_S", 0.001)
    doc = variants.wake([{"M": 48, "N": 40, "K": 32}], "gemm", n_rounds=2)
    r = doc["shapes"][0]
    assert r["ok"] and set(r["ms"]) == {"ours_cold", "ours_woken", "reference_cold", "reference_woken"}
    assert all(len(v) == 2 and min(v) > 0 for v in r["ms"].values()) and r["reference"].startswith("numpy")
    assert r["vs_reference_woken"] == r["median_ms"]["reference_woken"] / r["median_ms"]["ours_woken"]
