"""The Lab's fpga target through streamlit.testing: the simulated accelerator for gemm and conv1d, its level names,
simulated time, lowered code and simulated run; a buffer overflow shows its sentence; dwconv2d shows fpga disabled.

Shapes stay small (the simulator runs the lowered kernel instruction by instruction; GEMM at 1024^3 takes ~30 s
in the full-size count worker the later tests share)."""
import time

import pytest

from pages_app import no_failures, open_page

GEMM_SMALL = "M=64,N=64,K=64"


def _fpga(at, op: str, shape: str | None = None):
    """Switch the Lab to `op` on fpga, at a custom shape when given (set first, so the speed-test size is never
    simulated at full size on the way)."""
    at.selectbox(key="lab_op").set_value(op).run()
    if shape:
        at.button_group(key="lab_size").set_value("custom").run()
        at.text_input(key=f"lab_custom_{op}").input(shape).run()
    at.radio(key="lab_target").set_value("fpga").run()
    return at


def _wait_counts(at, tries: int = 30):
    """Rerun until the full-size simulation has landed (it runs on the background worker)."""
    import time
    for _ in range(tries):
        if any(s.value == "Simulated time" for s in at.subheader) and any(m.label == "Simulated time"
                                                                          for m in at.metric):
            return at
        time.sleep(0.5)
        at.run()
    return at


@pytest.mark.parametrize("op,shape", [("gemm", GEMM_SMALL), ("conv1d", None)])
def test_fpga_renders_with_its_levels_time_and_code(lab, op, shape):
    at = _wait_counts(_fpga(lab, op, shape))
    no_failures(at)
    assert not at.error, [e.value for e in at.error]
    heads = [s.value for s in at.subheader]
    for h in ("Knobs", "The drawable tile", "Reads at each level", "Simulated time", "The real kernel", "Code",
              "Roofline"):
        assert h in heads
    line = next(m.value for m in at.markdown if m.value.startswith("**Current kernel"))
    assert "DRAM" in line and "on-chip buffer" in line and "GEMM-core registers" in line and "global" not in line
    assert any("VTA-style accelerator" in m.value for m in at.markdown)         # the accelerator card
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Simulated time"].endswith(" ms") and metrics["Bound"] in ("memory", "compute")
    tile = at.get("plotly_chart")[0].proto.spec
    for name in ("DRAM", "on-chip buffer", "GEMM-core registers", "DMA load", "the GEMM core"):
        assert name in tile, name
    for color in ("#D55E00", "#0072B2", "#009E73"):                         # the fixed per-level colours
        assert color in tile
    assert any("simulated" in c.value.lower() for c in at.caption)
    tabs = at.tabs
    assert any(t.label.startswith("Lowered TensorIR") for t in tabs)
    roof = at.get("plotly_chart")[-1].proto.spec
    assert "not measured" in roof and '"simulated"' in roof


def test_fpga_tile_knobs_offer_multiples_of_the_core_block(lab):
    at = _fpga(lab, "gemm", GEMM_SMALL)
    no_failures(at)
    assert all(int(o) % 16 == 0 for o in at.select_slider(key="lab_k_gemm_fpga_tile_n").options)
    assert all(int(o) % 16 == 0 for o in at.select_slider(key="lab_k_gemm_fpga_tile_k").options)
    assert "1" in at.select_slider(key="lab_k_gemm_fpga_tile_m").options      # rows: any count (lo = 1)


def test_a_tile_that_overflows_a_buffer_shows_its_sentence(lab):
    at = _fpga(lab, "gemm", "M=1024,N=64,K=64")
    at.select_slider(key="lab_k_gemm_fpga_tile_m").set_value(1024).run()
    no_failures(at)
    assert any("input buffer would hold" in e.value and "over its 32 KiB" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert any("last valid schedule" in w.value for w in at.warning)
    assert at.get("plotly_chart")                                            # the last good picture stays


def test_compile_and_run_on_fpga_gives_a_simulated_result(lab):
    from kernels import results
    at = _fpga(lab, "gemm", "M=32,N=32,K=32")
    at.button(key="lab_run").click().run()
    no_failures(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Verified"] == "ok"
    assert "GFLOP/s (simulated)" in metrics and metrics["Simulated time"].endswith(" ms")
    for _ in range(120):                        # the comparisons arrive from the background
        if metrics["vs baseline"].endswith("x"):
            break
        time.sleep(0.5)
        at.run()
        metrics = {m.label: m.value for m in at.metric}
    assert metrics["vs baseline"].endswith("x")
    df = results.load()
    assert (df["target"] == "fpga").all() and df["device"].str.contains("simulated").all()


def test_dwconv2d_shows_fpga_disabled_with_the_reason(lab):
    lab.selectbox(key="lab_op").set_value("dwconv2d").run()
    lab.radio(key="lab_target").set_value("fpga").run()
    no_failures(lab)
    assert any("disabled" in w.value and "gemm and conv1d" in w.value for w in lab.warning)
    assert not lab.get("plotly_chart")


class _State:
    def __init__(self, at):
        self.at = at

    def get(self, key, default=None):
        return self.at.session_state[key] if key in self.at.session_state else default


def test_an_fpga_link_reproduces_the_view(tmp_path, monkeypatch):
    from pages._parts import frame
    at = open_page(None, tmp_path, monkeypatch, {"op": "conv1d", "target": "fpga", "preset": "seed",
                                                 "knobs": "double_buffer=false"})
    no_failures(at)
    assert at.radio(key="lab_target").value == "fpga"
    caption = next(c.value for c in at.caption if c.value.startswith("Shape `"))
    assert "double_buffer=false" in caption and "edited from the `seed` preset" in caption
    assert frame.lab_params(_State(at)) == {"op": "conv1d", "target": "fpga", "preset": "seed",
                                            "size": "speed test", "knobs": "double_buffer=false"}


def test_a_link_to_fpga_for_dwconv2d_shows_it_disabled(tmp_path, monkeypatch):
    at = open_page(None, tmp_path, monkeypatch, {"op": "dwconv2d", "target": "fpga"})
    no_failures(at)
    assert any("disabled" in w.value for w in at.warning)
    assert dict(at.query_params).get("target") == "fpga"
