"""Watchdog.snapshot / restore: a watchdog rebuilt from its JSON snapshot
before every step answers exactly as the one that saw the whole run (the step
API's guard, tracing.store.guard, keeps one per run between requests)."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.eval_data import eval_runs, requires_eval
from tests.tracing.helpers import act, loop_run, obs, thought
from tracing.core.steps import Step, read_jsonl
from tracing.core.watchdog import (
    AGGRESSIVE_POLICY,
    DEFAULT_POLICY,
    HINTS_ONLY_POLICY,
    Ladder,
    Policy,
    RunMemory,
    Watchdog,
)

# The fast lane off: the ladder climbs rung by rung.
SLOW = Policy(name="slow", ladder=Ladder(fast_futile=0))


def _decisions(wd: Watchdog, step: Step) -> tuple:
    iv = wd.observe(step)
    return step.index, None if iv is None else (iv.tier, iv.detector, iv.message, iv.evidence), wd.signals.get(
        step.index)


def assert_same_through_snapshots(steps: list[Step], goal: str, policy=DEFAULT_POLICY, context=None) -> list:
    whole = Watchdog(policy, goal=goal, context=context)
    expected = [_decisions(whole, s) for s in steps]
    memory = RunMemory()
    state = Watchdog(policy, goal=goal, context=context, memory=memory).snapshot()
    got = []
    for s in steps:
        # Through JSON text, as the guard stores it.
        wd = Watchdog.restore(json.loads(json.dumps(state)), policy, goal=goal, context=context, memory=memory)
        got.append(_decisions(wd, s))
        state = wd.snapshot()
    assert got == expected
    return [d for _, d, _ in expected if d is not None]


def mixed_run() -> list[Step]:
    """A loop, an error streak, a change of course and a loop again: every rung of the ladder."""
    steps: list[Step] = [thought(0, "Look it up.")]
    steps += loop_run(5, start=1)
    i = 11
    for k in range(6):
        steps += [act(i, "calc", f"1/{k}"), obs(i + 1, "ZeroDivisionError", "calc", status="error")]
        i += 2
    for k in range(3):
        steps += [act(i, "search", f"new topic {k}"), obs(i + 1, f"fresh fact {k} about topic {k} value {k * 7}")]
        i += 2
    steps += loop_run(8, start=i)
    return steps


def test_a_restored_watchdog_goes_on_as_the_whole_one():
    decisions = assert_same_through_snapshots(mixed_run(), goal="Which river is longer, the Nile or the Amazon?")
    assert [tier for tier, *_ in decisions] == ["hint", "stop"]  # the fast lane


@pytest.mark.parametrize("policy", [AGGRESSIVE_POLICY, HINTS_ONLY_POLICY, SLOW], ids=lambda p: p.name)
def test_other_policies_too(policy):
    decisions = assert_same_through_snapshots(mixed_run(), goal="Find the value", policy=policy)
    if policy is not AGGRESSIVE_POLICY:
        # The whole run is watched: redirects, ignored interventions, drift.
        assert len(decisions) >= 4 and "redirect" in {tier for tier, *_ in decisions}


def test_the_snapshot_stays_small_however_long_the_run():
    memory = RunMemory()
    wd = Watchdog(DEFAULT_POLICY, goal="count the items", memory=memory)
    sizes = []
    for n, i in enumerate(itertools.count(step=2)):
        if n == 3000:
            break
        wd.observe(act(i, "search", f"item {n}"))
        wd.observe(obs(i + 1, f"item {n} has {n * 13} parts and a colour {n % 97}", "search"))
        if n in (100, 2999):
            sizes.append(len(json.dumps(wd.snapshot())))
    assert sizes[1] < sizes[0] * 1.5, sizes
    assert len(memory.features) > 3000  # what grows lives in the run memory


@requires_eval
@pytest.mark.parametrize("source", ["alfworld_sala", "intercode", "tau2_retail_telecom", "react_webshop"])
def test_real_runs_through_snapshots(source):
    trajectories = list(itertools.islice(read_jsonl(eval_runs(source)), 12))
    for traj in trajectories:
        assert_same_through_snapshots(traj.steps, traj.goal, context=traj.context)
