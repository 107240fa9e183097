"""Runaway detectors: pure, incremental, Django-free.

Each module holds one detector as a small state machine with an ``update``
method (O(W) per step, never a rescan of the run) plus a ``scan(steps)``
function that runs it over a whole step sequence. Thresholds are module-level
constants with their reason next to them; ``tracing.watchdog.Policy`` uses them
as defaults. The watchdog combines the detectors and owns the escalation ladder.
"""

from __future__ import annotations

from tracing.detectors.drift import DriftDetector
from tracing.detectors.observation import ObservationDetector, ObservationSignal
from tracing.detectors.repetition import RepetitionDetector
from tracing.detectors.stagnation import StagnationDetector

__all__ = [
    "DriftDetector",
    "ObservationDetector",
    "ObservationSignal",
    "RepetitionDetector",
    "StagnationDetector",
]
