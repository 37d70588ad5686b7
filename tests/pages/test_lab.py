"""The Lab page through streamlit.testing: every operator x target, knobs, validation, compile & run."""
import dataclasses
import time

import pytest

from kernels.ops import OPS


def _counts_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Current kernel"))


def _no_failures(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("op", list(OPS))
def test_the_lab_runs_for_every_operator_and_target(lab, op, target):
    lab.selectbox(key="lab_op").set_value(op)
    lab.radio(key="lab_target").set_value(target).run()
    _no_failures(lab)
    assert lab.subheader[0].value == "Knobs"
    assert len(lab.get("plotly_chart")) >= 2          # the tile (or the bars) and the roofline at least
    assert len(lab.download_button) >= 2              # every chart offers its standalone HTML


def test_cuda_without_a_gpu_says_so_and_still_shows_the_source(lab):
    lab.radio(key="lab_target").set_value("cuda").run()
    _no_failures(lab)
    assert any("cannot time CUDA" in c.value for c in lab.caption)
    assert lab.button(key="lab_run_disabled").disabled
    assert any("recorded" in i.value.lower() for i in lab.info) or lab.dataframe


def test_moving_a_knob_changes_the_counts(lab):
    lab.radio(key="lab_target").set_value("cuda").run()
    before = _counts_line(lab)
    lab.selectbox(key="lab_k_gemm_cuda_cache_a").set_value("global").run()
    _no_failures(lab)
    assert _counts_line(lab) != before


def test_an_invalid_knob_shows_its_sentence_and_keeps_the_last_picture(lab):
    lab.radio(key="lab_target").set_value("cuda").run()
    lab.select_slider(key="lab_k_gemm_cuda_patch_m").set_value(128).run()
    _no_failures(lab)
    assert any("patch_m=128 is larger than tile_m=64" in e.value for e in lab.error)
    assert any("last valid schedule" in w.value for w in lab.warning)
    assert lab.get("plotly_chart")                    # the last good picture is still drawn


def test_an_invalid_custom_shape_shows_its_sentence(lab):
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=64,N=oops,K=64").run()
    _no_failures(lab)
    assert any("N must be a positive whole number" in e.value for e in lab.error)


def test_compile_and_run_on_cpu_shows_ok_and_a_time(lab):
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=64,N=64,K=64").run()
    lab.button(key="lab_run").click().run()
    _no_failures(lab)
    metrics = {m.label: m.value for m in lab.metric}
    assert metrics["Verified"] == "ok"
    assert metrics["Median"].endswith(" ms") and float(metrics["Median"].split()[0]) > 0
    # the comparisons time in the background after the kernel's own result, and arrive on later reruns
    for _ in range(120):
        if metrics["vs baseline"].endswith("x") and metrics["vs naive"].endswith("x"):
            break
        time.sleep(0.5)
        lab.run()
        metrics = {m.label: m.value for m in lab.metric}
    assert metrics["vs baseline"].endswith("x") and metrics["vs naive"].endswith("x")
    assert any("kernel timed by calls from Python back to back" in c.value for c in lab.caption)     # says how it was timed
    roof = lab.get("plotly_chart")[-1].proto.spec
    assert '"measured"' in roof                        # the timed kernel is on the roofline


def test_the_run_is_recorded_in_the_results_store(lab):
    from kernels import results
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=32,N=32,K=32").run()
    lab.button(key="lab_run").click().run()
    for _ in range(120):                    # the comparisons are recorded as they finish in the background
        df = results.load()
        if {"seed", "baseline", "naive"} <= set(df["preset"]):
            break
        time.sleep(0.5)
    assert {"seed", "baseline", "naive"} <= set(df["preset"]) and (df["op"] == "gemm").all()
    assert (df["timer"] == "calls from Python back to back").all()                  # how each was timed, stored with it


def test_a_slow_full_size_count_does_not_hold_the_page(lab, monkeypatch):
    import time

    from pages._parts import lab as parts
    real = parts.traffic.counts

    def slow(op, shape, knobs, target, **kw):
        if shape.get("M") == 640:
            time.sleep(4)
        return real(op, shape, knobs, target, **kw)

    monkeypatch.setattr(parts.traffic, "counts", slow)
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=640,N=64,K=64")
    t0 = time.perf_counter()
    lab.run()
    assert time.perf_counter() - t0 < 3.5
    _no_failures(lab)
    assert any("still being counted" in c.value for c in lab.caption)
    assert lab.get("plotly_chart")                    # the tile is drawn meanwhile


def _machine(lab):
    """The machine section after its background emulation (the page redraws as it would in a browser)."""
    for _ in range(120):
        if any(c.value.startswith("SASS ") and "emulated in" in c.value for c in lab.caption):
            return
        time.sleep(0.5)
        lab.run()


def test_a_kernel_that_spills_shows_local_memory_in_the_counts_the_sass_and_the_replay(lab):
    lab.radio(key="lab_target").set_value("cuda").run()
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=8,N=8,K=8").run()
    for knob, value in (("patch_m", 8), ("patch_n", 8), ("tile_m", 8), ("tile_n", 8)):
        lab.select_slider(key=f"lab_k_gemm_cuda_{knob}").set_value(value).run()
    lab.selectbox(key="lab_k_gemm_cuda_cache_c").set_value("global").run()
    _machine(lab)
    _no_failures(lab)
    assert any("local memory" in w.value for w in lab.warning)
    assert any(c.value.startswith("Why the SASS differs: Local memory:") for c in lab.caption)
    lab.segmented_control(key="lab_replay").set_value("SASS: what the machine executes").run()
    _no_failures(lab)
    assert any("Local memory appears" in c.value for c in lab.caption)


def test_the_tune_panel_shows_progress_and_applies_the_winner(lab):
    lab.button_group(key="lab_size").set_value("custom").run()
    lab.text_input(key="lab_custom_gemm").input("M=64,N=48,K=32").run()
    lab.select_slider(key="lab_tune_trials").set_value(8).run()
    lab.button(key="lab_tune").click().run()
    for _ in range(240):
        if any(m.value.startswith("**Winner:**") for m in lab.markdown):
            break
        time.sleep(0.5)
        lab.run()
    _no_failures(lab)
    said = next(m.value for m in lab.markdown if m.value.startswith("**Winner:**"))
    winner = said.split("`")[1]
    assert "timed by calls from Python back to back" in said
    assert any("Best so far" in (c.proto.spec or "") for c in lab.get("plotly_chart"))
    lab.button(key="lab_tune_apply").click().run()
    _no_failures(lab)
    shown = next(c.value for c in lab.caption if c.value.startswith("Shape ")).split("`")[3]
    assert shown == winner


def test_the_sass_tab_says_what_share_of_the_machine_code_multiplies_and_what_many_branches_mean():
    """The SASS tab's first line: the cubin's static mix (the one data/cpu_conv1d_mix.json recorded for these
    knobs), and, where branches crowd out the multiply-adds, that they are bounds tests."""
    import json
    from pathlib import Path
    from kernels.knobs import exact_tiles, preset
    from pages._parts import lab as L
    s = {"M": 255347, "N": 980}
    b = dataclasses.replace(preset("conv1d", "cuda", "best", s), pad_tiles=False)       # best before it padded
    m = L.sass_mix("conv1d", tuple(s.items()), b)
    data = json.loads((Path(__file__).resolve().parents[2] / "data" / "cpu_conv1d_mix.json").read_text())
    recorded = data["steps"][1]["output"]["shapes"][0]["runs"]["best"]
    assert {k: m[k] for k in recorded if k != "knobs"} == {k: v for k, v in recorded.items() if k != "knobs"}
    text = L.mix_caption(m)
    assert text.startswith(f"The machine code: {m['instructions']:,} instructions, {m['ffma_share']:.0%} of them "
                           f"multiply-adds (FFMA), {m['branches']:,} branches.") and "bounds tests" in text
    divided = L.sass_mix("conv1d", tuple(s.items()), exact_tiles("conv1d", "cuda", b, s)[0])
    assert divided["branches"] < 10 and "bounds tests" not in L.mix_caption(divided)
    # with those knobs the caption points to pad_tiles, whose figures are the padded cubin's (today's best)
    assert "pad_tiles=true pads the tiles" in L.mix_caption(m, b) and "pad_tiles" not in text
    padded = L.sass_mix("conv1d", tuple(s.items()), dataclasses.replace(b, pad_tiles=True))
    assert f"there: {padded['branches']} branches, {padded['ffma_share']:.0%} multiply-adds" in L.mix_caption(m, b)


def test_the_sass_tab_opens_with_the_machine_codes_mix(lab):
    lab.radio(key="lab_target").set_value("cuda").run()
    lab.session_state["lab_code_tabs"] = "SASS"
    lab.run()
    _no_failures(lab)
    assert any(c.value.startswith("The machine code: ") and "multiply-adds (FFMA)" in c.value for c in lab.caption)
