"""Fixtures: hand-built traces (see handmade.py)."""
import pytest

from handmade import gemm_trace
from kernels.records import Trace


@pytest.fixture
def shared_trace() -> Trace:
    return gemm_trace("shared")


@pytest.fixture
def naive_trace() -> Trace:
    return gemm_trace("naive")
