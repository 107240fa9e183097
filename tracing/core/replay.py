"""One replay of a watchdog policy over a recorded run, as if it had been live.

Used by ``python -m tracing.detect`` and by the what-if page: both must ask the
same question of the same steps with the same goal, or their figures drift.
A stop ends the replay: nothing after it would have happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracing.core.steps import Step
from tracing.core.watchdog import DEFAULT_POLICY, Policy, Watchdog


@dataclass
class Replay:
    watchdog: Watchdog
    # Steps the policy saw: all of them, or up to and including its stop.
    evaluated: list[Step] = field(default_factory=list)
    # {"step", "detector", "tier", "evidence"} per intervention, in order.
    interventions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stopped_at(self) -> int | None:
        return self.watchdog.interventions[-1][0] if self.watchdog.stopped else None


def replay(
    steps: Sequence[Step], *, goal: str, policy: Policy = DEFAULT_POLICY, context: dict[str, Any] | None = None
) -> Replay:
    wd = Watchdog(policy, goal=goal, context=context)
    out = Replay(watchdog=wd)
    for step in steps:
        out.evaluated.append(step)
        iv = wd.observe(step)
        if iv is None:
            continue
        out.interventions.append({"step": step.index, "detector": iv.detector, "tier": iv.tier, "evidence": iv.evidence})
        if iv.tier == "stop":
            break
    return out
