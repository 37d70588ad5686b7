"""The cycle model on hand-built instruction lists: never below either bound; with double buffering and
steady stages it reaches the larger bound plus the pipeline fill exactly, without it the plain sum."""
from __future__ import annotations

import pytest

from kernels.fpga.pipeline import Op, schedule, timing


def steps(n: int, load: int, compute: int, store: int, double: bool) -> list[Op]:
    """n k-steps: load tile t (into slot t % 2, or the one slot), compute on it, one store at the end.
    A load waits for the compute that last read its slot; a compute for its load and the previous compute."""
    ops: list[Op] = []
    loads, comps = [], []
    for t in range(n):
        slot_reader = comps[t - 2] if double and t >= 2 else (comps[t - 1] if not double and t >= 1 else None)
        loads.append(len(ops))
        ops.append(Op("load", load, () if slot_reader is None else (slot_reader,), "load"))
        comps.append(len(ops))
        ops.append(Op("compute", compute, (loads[t],) + ((comps[t - 1],) if t else ()), "gemm"))
    ops.append(Op("store", store, (comps[-1],), "store"))
    return ops


def run(ops, macs_per_cycle=1, dram=1):
    # MACs and bytes chosen so that the bounds are the busy cycles of the core and of the DRAM port
    macs = sum(o.cycles for o in ops if o.queue == "compute")
    dram_bytes = sum(o.cycles for o in ops if o.queue != "compute")
    return timing(ops, macs, dram_bytes, macs_per_cycle, dram, 100.0)


@pytest.mark.parametrize("load,compute", [(3, 5), (5, 3), (4, 4), (1, 9), (9, 1)])
def test_double_buffering_reaches_larger_bound_plus_fill(load, compute):
    n, store = 12, 2
    t = run(steps(n, load, compute, store, double=True))
    larger = max(t.compute_bound, t.memory_bound)
    # compute-bound: the core waits only for the first load and after the last compute (the store);
    # memory-bound: the DRAM port waits only while the last compute runs, before the store
    fill = load + store if t.compute_bound > t.memory_bound else compute
    assert t.cycles == larger + fill
    assert t.fill_cycles == fill


@pytest.mark.parametrize("load,compute", [(3, 5), (5, 3), (4, 4)])
def test_single_buffer_serialises_load_and_compute(load, compute):
    n, store = 12, 2
    t = run(steps(n, load, compute, store, double=False))
    assert t.cycles == n * (load + compute) + store == t.serial_cycles
    assert t.overlap_cycles == 0


@pytest.mark.parametrize("double", [False, True])
def test_cycles_never_beat_either_bound(double):
    for load, compute, store in [(1, 1, 1), (7, 2, 3), (2, 7, 1), (5, 5, 20)]:
        t = run(steps(9, load, compute, store, double))
        assert t.cycles >= max(t.compute_bound, t.memory_bound)
        assert t.cycles <= t.serial_cycles


def test_loads_and_stores_share_one_dram_port():
    ops = [Op("load", 10), Op("store", 10)]         # independent, but one port: one after the other
    assert max(e for _, e in schedule(ops)) == 20


def test_independent_load_and_compute_overlap():
    ops = [Op("load", 10), Op("compute", 10)]
    assert max(e for _, e in schedule(ops)) == 10
