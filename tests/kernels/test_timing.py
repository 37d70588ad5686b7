"""How kernels and the reference libraries are timed (kernels.build): on a GPU both sides replay CUDA graphs, a short
kernel's calls many to a graph; elsewhere TVM's time_evaluator. The graph arithmetic is checked against a stand-in
for torch's CUDA graph API whose replay takes a known time per captured call."""
from __future__ import annotations

import contextlib
import time
import types

import numpy as np
import pytest

from kernels import build


class FakeTorch:
    """torch.cuda's stream and graph calls; a graph's replay sleeps `per_call_s` for each call captured in it, plus
    `launch_s` once (the replay's own launch)."""

    def __init__(self, per_call_s: float, launch_s: float):
        self.per_call_s, self.launch_s, self.capturing, self.plain = per_call_s, launch_s, None, 0
        fake = self

        class Graph:
            def __init__(self):
                self.calls = 0

            def replay(self):
                time.sleep(fake.launch_s + self.calls * fake.per_call_s)

        @contextlib.contextmanager
        def graph(g):
            fake.capturing = g
            yield
            fake.capturing = None

        stream = types.SimpleNamespace(wait_stream=lambda other: None)
        self.cuda = types.SimpleNamespace(Stream=lambda: stream, current_stream=lambda: stream,
                                          stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=graph,
                                          synchronize=lambda: None)

    def call(self):
        if self.capturing is not None:
            self.capturing.calls += 1
        else:
            self.plain += 1


def test_a_short_kernels_graph_holds_as_many_calls_as_fill_the_graph_and_the_time_is_per_call(monkeypatch):
    # scaled up to what sleep resolves: 1 ms a replay's launch, 0.5 ms a call, graphs filled to 20 ms
    monkeypatch.setattr(build, "GRAPH_FILL_MS", 20.0)
    t = FakeTorch(per_call_s=0.5e-3, launch_s=1e-3)
    replay = build._graphed(t, t.call)
    assert t.plain == 3                                      # warmed up outside any graph
    # sized by the one-call graph's time (1.5 ms, a little more as measured): ceil(20 / 1.5) = 14 calls or fewer
    assert 10 <= replay.calls <= 14
    ms = build._one_repeat(replay, 3, lambda: None)
    # per call: the launch shared by the graph's calls, not paid by each
    assert ms == pytest.approx(1.0 / replay.calls + 0.5, rel=0.2)
    assert ms < 1.5 * 0.5


def test_a_long_kernel_is_one_call_a_graph_and_fill_false_never_times():
    t = FakeTorch(per_call_s=1e-3, launch_s=0.0)           # 1 ms a call: over GRAPH_FILL_MS (0.2)
    assert build._graphed(t, t.call).calls == 1
    t = FakeTorch(per_call_s=1e-6, launch_s=0.0)
    t0 = time.perf_counter()
    replay = build._graphed(t, t.call, fill=False)           # a profiler's reference: one call, nothing timed
    assert replay.calls == 1 and time.perf_counter() - t0 < 0.005


def test_a_refused_capture_falls_back_to_plain_calls():
    t = FakeTorch(per_call_s=1e-6, launch_s=0.0)

    def refused():
        if t.capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")
    assert build._graphed(t, refused) is None


def test_the_cpu_times_kernels_by_python_calls_as_numpy_is_and_says_so():
    from kernels.knobs import preset
    shape = {"M": 300, "N": 5}
    k = preset("conv1d", "cpu", "best", shape)
    r = build.run("conv1d", shape, k, "cpu", repeat=2)
    assert r.ok and r.timer == build.CPU_TIMER and r.as_dict()["timer"] == r.timer
    _, mod, _ = build.compiled("conv1d", tuple(shape.items()), k, "cpu")
    ms, _, rel, how = build.time_module("conv1d", shape, mod, "cpu", 3)
    assert ms > 0 and rel < build.TOLERANCE and how == build.CPU_TIMER
    # each call from Python costs ours what it costs numpy: never less than TVM's own loop in C++ takes a call
    _, args, _ = build.call_verified("conv1d", shape, mod, build._tvm_dev("cpu"), "cpu")
    c_loop = min(build._time_evaluator_ms(mod, build._tvm_dev("cpu"), args, 5))
    python = min(build.kernel_timer(mod, build._tvm_dev("cpu"), args)[1]() for _ in range(5))
    assert python >= c_loop * 0.9


@pytest.mark.skipif(build.target_available("cuda") is not None or build._torch() is None,
                    reason="needs a GPU and torch (the GPU machine; its data: data/h100_graph_timer.json)")
def test_on_the_gpu_both_sides_replay_graphs_and_a_long_kernel_times_as_time_evaluator_says():
    from kernels.knobs import preset
    for shape, close in (({"M": 2048, "N": 2048, "K": 2048}, True), ({"M": 64, "N": 64, "K": 64}, False)):
        k = preset("gemm", "cuda", "best", shape)
        _, mod, _ = build.compiled("gemm", tuple(shape.items()), k, "cuda")
        rel, args, _ = build.call_verified("gemm", shape, mod, build._tvm_dev("cuda"), "cuda")
        how, once = build.kernel_timer(mod, build._tvm_dev("cuda"), args)
        assert rel < build.TOLERANCE and how == build.GRAPH_TIMER
        graph = float(np.median([once() for _ in range(5)]))
        evaluator = float(np.median(build._time_evaluator_ms(mod, build._tvm_dev("cuda"), args, 5)))
        if close:
            assert graph == pytest.approx(evaluator, rel=0.05)
        else:               # a 64^3 kernel: under time_evaluator's launch floor
            assert graph < evaluator


def _counting(seconds: float):
    def fn():
        fn.n += 1
        time.sleep(seconds)
    fn.n = 0
    return fn


def test_a_repeat_that_one_call_fills_reuses_the_call_that_sized_it_and_a_callers_check_can_be_the_warm_up():
    """A search's slow candidates (seconds a call on the CPU) are not called more often than time_evaluator called
    them: warm-up, one timed call that is also the first repeat; then one call per repeat."""
    slow = _counting(0.012)
    once = build._repeater(slow, build._no_sync, first=True)
    assert slow.n == 2
    assert once() == pytest.approx(12, rel=0.5) and slow.n == 2       # the sizing call, not a new one
    once()
    assert slow.n == 3
    fn = _counting(0.012)
    plain = build._repeater(fn, build._no_sync)
    assert plain() > 0 and fn.n == 3                                # without `first` every repeat calls
    # warmed by the caller: a long first call is timed as it is, a short one warms up for the next
    long_ = _counting(build.LONG_CALL_S)
    assert build._calls_per_repeat(long_, build._no_sync, warm=False)[0] == 1 and long_.n == 1
    short = _counting(0.001)
    n, ms = build._calls_per_repeat(short, build._no_sync, warm=False)
    assert short.n == 2 and n >= 5 and ms == pytest.approx(1, rel=2)


def test_the_searchs_child_times_a_checked_candidate_without_waiting_or_calling_it_again_to_warm_up(monkeypatch):
    """isolated.judge: the check is the warm-up of a long call, and no BLAS threads ran in the child, so no settle."""
    from kernels import isolated
    from kernels.knobs import preset
    shape = {"M": 300, "N": 5}
    k = preset("conv1d", "cpu", "best", shape)
    _, mod, _ = build.compiled("conv1d", tuple(shape.items()), k, "cpu")
    slept = []
    monkeypatch.setattr(build.time, "sleep", lambda s: slept.append(s))
    ms, rel, err = isolated.judge("conv1d", shape, "cpu", mod, build._tvm_dev("cpu"),
                                  build.fresh_check("conv1d", shape, "cpu"), None, 3, 3.0)
    assert ms > 0 and rel < build.TOLERANCE and err == "" and slept == []
    build.kernel_timer(mod, build._tvm_dev("cpu"), build.call_verified("conv1d", shape, mod,
                                                                       build._tvm_dev("cpu"), "cpu")[1])
    assert slept == [build.SETTLE_S]                     # a run beside numpy still settles


def test_beside_the_reference_each_side_is_woken_by_an_untimed_call_after_the_pause(monkeypatch):
    """On the CPU each side waits SETTLE_S (the other's threads go idle), then one call of its own wakes its
    threads, untimed; without `settle` (a GPU) neither pauses nor wakes."""
    events = []
    monkeypatch.setattr(build.time, "sleep", lambda s: events.append("pause"))

    def side(name):
        def fn():
            events.append(name)
        return fn
    ours = build._repeater(side("ours"), build._no_sync, first=True)
    ref = build._repeater(side("numpy"), build._no_sync)
    events.clear()
    times, ref_times = build.alternate(ours, ref, 2, settle=True)
    assert len(times) == len(ref_times) == 2
    # each pause is followed by the side about to be timed: its one untimed call, then its timed calls
    pauses = [i for i, e in enumerate(events) if e == "pause"]
    assert len(pauses) == 4 and [events[i + 1] for i in pauses] == ["ours", "numpy", "ours", "numpy"]
    segments = [events[a + 1:b] for a, b in zip(pauses, pauses[1:] + [len(events)])]
    events.clear()
    ours(), ref()
    n_ours, n_ref = events.count("ours"), events.count("numpy")       # the calls of one timed repeat each
    assert [len(x) for x in segments] == [n_ours + 1, n_ref + 1] * 2 and all(len(set(x)) == 1 for x in segments)
    events.clear()
    build.alternate(ours, ref, 2, settle=False)
    assert "pause" not in events
