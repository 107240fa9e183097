"""Policy what-if: replay a policy (or a sweep of one threshold) over stored
runs with the same detector code as the live watchdog, and set the result
against reviewers' labels.

The replay is pure (`replay_policy` over step records); `whatif_execute`
streams the stored runs of a snapshot into it for a WhatIfJob.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracing.core.replay import replay
from tracing.core.steps import Step as StepRecord
from tracing.core.watchdog import Policy, PolicyError

# A labelled interruption counts as "still caught" when the replayed policy
# intervenes within this many steps of it: a stricter policy fires a little
# earlier, a looser one a little later, on the same trouble.
MATCH_WINDOW = 2
# Values in one sweep: a trade-off curve needs a handful, a hundred is a mistake.
MAX_SWEEP_VALUES = 25


@dataclass
class Outcome:
    """One policy's replay figures."""

    runs: int = 0
    interrupted: int = 0
    stopped: int = 0
    stopped_succeeded: int = 0  # stopped runs the data says succeeded: false kills by outcome
    stopped_failed: int = 0
    first_stop_steps: list[int] = field(default_factory=list)
    justified_total: int = 0
    justified_caught: int = 0
    wrongly_total: int = 0
    wrongly_spared: int = 0

    def as_dict(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        stops = sorted(self.first_stop_steps)
        d["first_stop_steps"] = stops[:2000]
        d["median_stop_step"] = stops[len(stops) // 2] if stops else None
        return d


def sweep_policies(base: dict[str, Any], path: str, values: Sequence[float]) -> list[Policy]:
    """One policy per value of the field at `path` ("ladder.stop_streak");
    raises PolicyError naming the field when a value is out of range."""
    if not values:
        raise PolicyError(path or "sweep", "give at least one value")
    if len(values) > MAX_SWEEP_VALUES:
        raise PolicyError("sweep", f"at most {MAX_SWEEP_VALUES} values")
    section, _, name = path.partition(".")
    if section not in ("thresholds", "windows", "ladder") or not name:
        raise PolicyError(path or "sweep", "sweep a field like thresholds.novelty_min or ladder.stop_streak")
    if not isinstance(base, dict):
        raise PolicyError("(root)", "a policy must be a JSON object")
    if not isinstance(base.get(section, {}), dict):
        raise PolicyError(section, "must be an object")
    policies = []
    for value in values:
        config = copy.deepcopy(base)
        config.setdefault(section, {})[name] = value
        policies.append(Policy.from_dict(config))
    return policies


def replay_policy(steps: Sequence[StepRecord], goal: str, policy: Policy,
                  context: dict[str, Any] | None = None) -> list[tuple[int, str, str]]:
    """(step, detector, tier) of each intervention the policy would make; a stop ends the replay."""
    return [(iv["step"], iv["detector"], iv["tier"])
            for iv in replay(steps, goal=goal, policy=policy, context=context).interventions]


@dataclass
class RunData:
    run_id: int
    goal: str
    success: bool | None
    steps: list[StepRecord]
    # What the agent was told (system prompt, tool schemas): evidence, as in the analysis.
    context: dict[str, Any] | None = None


def evaluate(runs: Iterable[RunData], policies: Sequence[Policy], labels: dict[int, list[tuple[int, str]]],
             progress=None) -> list[Outcome]:
    """Replay every policy over every run; `labels` maps run id -> [(step, label)]."""
    outcomes = [Outcome() for _ in policies]
    for count, run in enumerate(runs, start=1):
        run_labels = labels.get(run.run_id, [])
        for policy, out in zip(policies, outcomes, strict=True):
            ivs = replay_policy(run.steps, run.goal, policy, run.context)
            out.runs += 1
            if ivs:
                out.interrupted += 1
            stop = next((s for s, _, tier in ivs if tier == "stop"), None)
            if stop is not None:
                out.stopped += 1
                out.first_stop_steps.append(stop)
                if run.success is True:
                    out.stopped_succeeded += 1
                elif run.success is False:
                    out.stopped_failed += 1
            for step, label in run_labels:
                near = any(abs(s - step) <= MATCH_WINDOW for s, _, _ in ivs)
                if label == "justified":
                    out.justified_total += 1
                    out.justified_caught += near
                elif label == "wrongly_killed":
                    out.wrongly_total += 1
                    out.wrongly_spared += not near
        if progress is not None:
            progress(count)
    return outcomes


def cache_key(configs: list[dict], snapshot: dict[str, Any]) -> str:
    blob = json.dumps({"policies": configs, "snapshot": snapshot}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def group_steps(rows: Iterable[tuple],
                goals: dict[int, tuple[str, bool | None, dict[str, Any] | None]]) -> Iterator[RunData]:
    """Rows (run_id, index, kind, role, text, tool, args, meta) ordered by
    (run_id, index) -> one RunData per run; `goals` maps run id -> (goal,
    success, context)."""
    current: RunData | None = None
    for run_id, index, kind, role, text, tool, args, meta in rows:
        if current is None or current.run_id != run_id:
            if current is not None:
                yield current
            goal, success, context = goals.get(run_id, ("", None, None))
            current = RunData(run_id, goal, success, [], context or None)
        current.steps.append(StepRecord(index=index, kind=kind, role=role, text=text, tool=tool or None, args=args,
                                        meta=meta or {}))
    if current is not None:
        yield current
