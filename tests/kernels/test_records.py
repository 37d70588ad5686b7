"""The pure summaries over hand-built records (no TVM needed for the logic)."""
from __future__ import annotations

import numpy as np

from kernels.records import Access, Counts, describe, max_global_reads, passes_line, reads_per_element, running, totals


def _recs():
    rows = [
        (0, 0, 0, "A", (0, 0), "global", "read"),
        (0, 0, 1, "A", (0, 0), "global", "read"),
        (0, 0, 0, "A", (0, 1), "shared", "write"),
        (1, 0, -1, "", (), "shared", "barrier"),
        (1, 0, 0, "A", (0, 1), "shared", "read"),
        (1, 0, 1, "A", (0, 1), "register", "read"),
    ]
    return [Access(i, p, b, t, tn, idx, lvl, k) for i, (p, b, t, tn, idx, lvl, k) in enumerate(rows)]


def test_totals_count_reads_per_level_up_to_a_step_and_for_one_thread():
    r = _recs()
    assert totals(r) == {"global": 2, "shared": 1, "register": 1}
    assert totals(r, upto=1) == {"global": 2, "shared": 0, "register": 0}
    assert totals(r, thread=1) == {"global": 1, "shared": 0, "register": 1}


def test_running_counters_advance_only_on_the_chosen_threads_reads():
    run = running(_recs(), thread=0)
    assert [x["global"] for x in run] == [1, 1, 1, 1, 1, 1]
    assert run[-1]["shared"] == 1


def test_reads_per_element_is_the_reuse_map():
    m = reads_per_element(_recs(), "A", (1, 2), level=None)
    assert m.tolist() == [[2, 2]]
    assert reads_per_element(_recs(), "A", (1, 2)).tolist() == [[2, 0]]


def test_max_global_reads_and_the_seed_line():
    assert max_global_reads(_recs(), "A") == 2
    assert passes_line(8, 16, 2, 1) == "over 8 passes: naive 16, shared 2, local 1"


def test_describe_reads_like_the_seed():
    r = _recs()[0]
    assert describe(r, 1) == "thread 0 of block 0 reads A[0, 0] straight from global memory; global reads so far: 1"
    assert "barrier" in describe(_recs()[3], 0)
    assert describe(_recs()[2], 0).endswith("writes A[0, 1] into shared memory")


def test_intensity_is_flops_per_byte_at_each_level():
    c = Counts(per_tensor={"A": {"global": {"read": 10, "write": 0}, "shared": {"read": 0, "write": 0},
                                 "register": {"read": 40, "write": 0}}},
               instructions={}, ncu={}, differences=(), flops=80, min_bytes=40)
    assert c.intensity()["global"] == 2.0 and c.intensity()["register"] == 0.5
    assert np.isclose(c.level_totals()["register"], 40)
