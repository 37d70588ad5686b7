"""Links reproduce the view: the Lab's operator, target, shape, preset and knobs travel in the URL."""
from pages_app import no_failures, open_page


def _caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Shape `"))


def test_a_lab_link_sets_the_view(tmp_path, monkeypatch):
    at = open_page(None, tmp_path, monkeypatch,
                   {"op": "conv1d", "target": "cuda", "preset": "naive", "knobs": "tile=128"})
    no_failures(at)
    assert at.selectbox(key="lab_op").value == "conv1d" and at.radio(key="lab_target").value == "cuda"
    assert "tile=128" in _caption(at) and "edited from the `naive` preset" in _caption(at)


class _State:
    """AppTest's session state with the .get that frame.lab_params reads."""
    def __init__(self, at):
        self.at = at

    def get(self, key, default=None):
        return self.at.session_state[key] if key in self.at.session_state else default


def test_the_url_written_after_a_knob_move_reproduces_the_view(tmp_path, monkeypatch):
    # Under AppTest only the first run of a session goes through app.py (AppTest resets Streamlit's pages-folder
    # flag before every run, so later runs execute pages/lab.py alone); the browser test covers the live URL.
    from pages._parts import frame
    at = open_page(None, tmp_path, monkeypatch)
    assert dict(at.query_params) == {"op": "gemm", "target": "cpu", "preset": "seed", "size": "speed test"}
    at.radio(key="lab_target").set_value("cuda").run()
    at.selectbox(key="lab_k_gemm_cuda_cache_a").set_value("shared").run()
    no_failures(at)
    params = frame.lab_params(_State(at))
    assert params == {"op": "gemm", "target": "cuda", "preset": "seed", "size": "speed test",
                      "knobs": "cache_a=shared"}
    again = open_page(None, tmp_path, monkeypatch, params)
    assert _caption(again) == _caption(at)


def test_a_custom_shape_travels_too(tmp_path, monkeypatch):
    at = open_page(None, tmp_path, monkeypatch, {"op": "gemm", "shape": "M=64,N=32,K=16", "target": "cpu"})
    no_failures(at)
    assert "M=64,N=32,K=16" in _caption(at)
    assert dict(at.query_params).get("shape") == "M=64,N=32,K=16"


def test_a_bad_link_says_what_it_could_not_use(tmp_path, monkeypatch):
    at = open_page(None, tmp_path, monkeypatch, {"op": "gemm", "knobs": "tile_m=banana"})
    no_failures(at)
    assert any("From the link" in w.value and "whole number" in w.value for w in at.warning)
