"""Stagnation: k consecutive observations without progress.

Progress is a usable new result (observation class ``ok``); empty, failed,
junk, off-topic and already-seen returns are not. Error steps (output that did
not parse, model errors) count as a turn without progress too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracing.core.detectors.observation import ObservationDetector, ObservationSignal
from tracing.core.steps import Step

# Consecutive non-progress observations that make a run "stagnant". 4: two
# failed rephrasings plus a retry are normal exploration; four in a row is not.
STAGNATION_K = 4


@dataclass
class StagnationSignal:
    step: int
    progress: bool
    streak: int  # consecutive non-progress observations ending at this step
    since_step: int | None  # index of the first observation of the streak
    flag: bool

    def as_dict(self) -> dict[str, Any]:
        return {"progress": int(self.progress), "stagnation": self.streak}


@dataclass
class StagnationDetector:
    k: int = STAGNATION_K
    streak: int = 0
    since_step: int | None = None

    def update(self, step_index: int, progress: bool) -> StagnationSignal:
        if progress:
            self.streak, self.since_step = 0, None
        else:
            if self.streak == 0:
                self.since_step = step_index
            self.streak += 1
        return StagnationSignal(
            step=step_index,
            progress=progress,
            streak=self.streak,
            since_step=self.since_step,
            flag=self.streak >= self.k,
        )

    def update_observation(self, sig: ObservationSignal) -> StagnationSignal:
        return self.update(sig.step, sig.progress)


def scan(steps: Iterable[Step], k: int = STAGNATION_K) -> list[StagnationSignal]:
    obs = ObservationDetector()
    det = StagnationDetector(k=k)
    out = []
    for step in steps:
        if step.kind == "error":
            out.append(det.update(step.index, False))
        elif (sig := obs.update(step)) is not None:
            out.append(det.update_observation(sig))
    return out
