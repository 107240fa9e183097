"""Runaway detectors: pure, incremental, Django-free.

Each module holds one detector as a small state machine with an ``update``
method (O(W) per step, never a rescan of the run) plus a ``scan(steps)``
function that runs it over a whole step sequence. Thresholds are module-level
constants with their reason next to them; ``tracing.core.watchdog.Policy`` uses them
as defaults. The watchdog combines the detectors and owns the escalation ladder.
"""

from __future__ import annotations

from tracing.core.detectors.drift import DriftDetector
from tracing.core.detectors.observation import ObservationDetector, ObservationSignal
from tracing.core.detectors.repetition import RepetitionDetector
from tracing.core.detectors.stagnation import StagnationDetector

__all__ = [
    "DriftDetector",
    "ObservationDetector",
    "ObservationSignal",
    "RepetitionDetector",
    "StagnationDetector",
]
