"""The hold-out corruptions (bench/anchoring_holdout.py) on tiny hand-made runs:
each kind changes exactly the step it names and nothing else. No eval data."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import anchoring_holdout as H  # noqa: E402

from tracing.core.steps import Step, Trajectory  # noqa: E402


def _qa() -> Trajectory:
    steps = [
        Step(0, "thought", "I need to search Lake Wobegon and find its population."),
        Step(1, "action", "Search[Lake Wobegon]", tool="Search", args="Lake Wobegon"),
        Step(
            2, "observation", "Lake Wobegon is a town in Mist County, Minnesota, with 1,342 inhabitants.", tool="Search"
        ),
        Step(3, "thought", "Lake Wobegon is in Mist County and has 1,342 inhabitants, so the answer is Mist County."),
        Step(4, "final", "Mist County", tool="Finish", args="Mist County"),
    ]
    return Trajectory(run_id="qa-1", task="Which county is Lake Wobegon in?", steps=steps, source="reflexion_hotpotqa")


def _other() -> Trajectory:
    steps = [
        Step(0, "action", "Search[Gopher Prairie]", tool="Search", args="Gopher Prairie"),
        Step(1, "observation", "Gopher Prairie lies in Wheat Valley County.", tool="Search"),
        Step(2, "final", "Wheat Valley County", tool="Finish", args="Wheat Valley County"),
    ]
    return Trajectory(
        run_id="qa-2", task="Which county is Gopher Prairie in?", steps=steps, source="reflexion_hotpotqa"
    )


def _shop() -> Trajectory:
    first = {"order_id": "#W1000001", "status": "pending", "address": {"address1": "12 Oak Street", "zip": "10001"}}
    second = {"order_id": "#W1000001", "status": "pending", "address": {"address1": "98 Elm Road", "zip": "10001"}}
    steps = [
        Step(0, "observation", "Hi, I want to move order #W1000001 to 98 Elm Road.", tool="user"),
        Step(
            1,
            "action",
            'get_order_details({"order_id": "#W1000001"})',
            tool="get_order_details",
            args={"order_id": "#W1000001"},
        ),
        Step(2, "observation", json.dumps(first), tool="get_order_details"),
        Step(
            3,
            "action",
            "Your order ships to 12 Oak Street. Shall I change it?",
            tool="respond",
            args={"content": "Your order ships to 12 Oak Street. Shall I change it?"},
        ),
        Step(4, "observation", "Yes please.", tool="user"),
        Step(
            5,
            "action",
            'modify_pending_order_address({"order_id": "#W1000001", "address1": "98 Elm Road"})',
            tool="modify_pending_order_address",
            args={"order_id": "#W1000001", "address1": "98 Elm Road"},
        ),
        Step(6, "observation", json.dumps(second), tool="modify_pending_order_address"),
        Step(
            7,
            "action",
            "Done: order #W1000001 now ships to 98 Elm Road.",
            tool="respond",
            args={"content": "Done: order #W1000001 now ships to 98 Elm Road."},
        ),
    ]
    return Trajectory(run_id="shop-1", task="Move an order.", steps=steps, source="tau2_retail_telecom")


def _unchanged_except(orig: Trajectory, case: H.Case) -> None:
    """Every step the case does not name is byte-for-byte the original (renumbered
    past a deletion), and every step it names as edited did change."""
    deleted = sorted(i for i, how in case.changed.items() if how == "deleted")
    kept = [s for s in orig.steps if s.index not in deleted]
    assert len(case.steps) == len(kept)
    for old, new in zip(kept, case.steps, strict=True):
        shift = sum(1 for d in deleted if d < old.index)
        assert new.index == old.index - shift
        same = (new.kind, new.text, new.tool, new.args) == (old.kind, old.text, old.tool, old.args)
        assert same == (case.changed.get(old.index) != "edited"), old.index


def _check(orig: Trajectory, case: H.Case | None, kind: str, target: int, changed: dict[int, str]) -> H.Case:
    assert case is not None
    assert case.kind == kind
    assert case.target == target
    assert case.changed == changed
    _unchanged_except(orig, case)
    return case


def test_answer_swap_replaces_the_answer_with_another_runs_answer():
    run = _qa()
    pool = H.build_pool([run, _other()])
    case = _check(run, H.corrupt("answer_swap", run, 11, pool), "answer_swap", 4, {4: "edited"})
    assert case.steps[4].text == case.steps[4].args == "Wheat Valley County"


@pytest.mark.parametrize("kind", ["ignored_failure", "empty_result"])
def test_failed_or_empty_observation_keeps_the_next_statement(kind):
    run = _qa()
    case = _check(run, H.corrupt(kind, run, 11), kind, 3, {2: "edited"})
    assert "Mist County" not in case.steps[2].text
    assert case.steps[3].text == run.steps[3].text


def test_number_drift_changes_one_number_of_the_statement():
    run = _qa()
    case = _check(run, H.corrupt("number_drift", run, 11), "number_drift", 3, {3: "edited"})
    assert "1,342" not in case.steps[3].text and "Mist County" in case.steps[3].text
    drifted = [sp for sp, cat in H.spans(case.steps[3].text) if cat == "number"]
    assert drifted and "," in drifted[0]  # same formatting


def test_invented_call_deletes_the_call_and_its_result():
    run = _qa()
    case = _check(run, H.corrupt("invented_call", run, 11), "invented_call", 1, {1: "deleted", 2: "deleted"})
    assert [s.index for s in case.steps] == [0, 1, 2]
    assert case.steps[1].text == run.steps[3].text


def test_stale_value_says_the_value_before_the_update():
    run = _shop()
    case = _check(run, H.corrupt("stale_value", run, 11), "stale_value", 7, {7: "edited"})
    assert "12 Oak Street" in case.steps[7].text and "12 Oak Street" in case.steps[7].args["content"]


def test_no_case_at_or_after_the_detectors_first_break():
    run = _qa()
    assert H.corrupt("ignored_failure", run, 11, limit=3) is None
    assert H.corrupt("answer_swap", run, 11, H.build_pool([run, _other()]), limit=4) is None


def test_the_seed_picks_the_case():
    run = _qa()
    a = H.corrupt("number_drift", run, 11)
    b = H.corrupt("number_drift", run, 11)
    assert a is not None and b is not None and a.steps[3].text == b.steps[3].text
