"""Kernel Lab's kernel library: operators, knobs, schedules, builds, traffic and results."""
from .knobs import PRESET_NAMES, KnobError, preset, resolve, validate
from .ops import OPS

__all__ = ["OPS", "PRESET_NAMES", "KnobError", "preset", "resolve", "validate"]
