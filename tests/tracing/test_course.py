from __future__ import annotations

from tracing.core.course import CHANGED_BELOW, course_changes
from tracing.core.steps import Step


def act(i, args, tool="search"):
    return Step(index=i, kind="action", tool=tool, args={"query": args})


def hint(i, tier="hint"):
    return Step(index=i, kind="intervention", text="change approach", meta={"detector": "repetition", "tier": tier})


def test_a_new_query_after_a_hint_is_a_change_of_course():
    steps = [act(0, "tolbey quary playhouse"), hint(1), act(2, "playhouse seats")]
    assert course_changes(steps) == {1: {"after": 2, "before": 0, "changed": True, "similarity": 0.25}}


def test_the_same_query_again_is_not():
    steps = [act(0, "tolbey quary playhouse"), hint(1, "redirect"), act(2, "Tolbey Quary Playhouse!")]
    assert course_changes(steps)[1]["changed"] is False


def test_both_sides_of_the_threshold():
    # 4 of 5 tokens shared = 0.8: not a change; 3 of 5 = 0.6 (< CHANGED_BELOW): a change.
    base = "alpha beta gamma delta"
    assert course_changes([act(0, base), hint(1), act(2, base + " epsilon")])[1]["similarity"] == CHANGED_BELOW
    assert course_changes([act(0, base), hint(1), act(2, base + " epsilon")])[1]["changed"] is False
    assert course_changes([act(0, "alpha beta gamma"), hint(1), act(2, "alpha beta zeta eta")])[1]["changed"] is True


def test_another_tool_or_an_answer_counts_as_a_change_and_stops_are_left_out():
    assert course_changes([act(0, "x y"), hint(1), act(2, "x y", tool="lookup")])[1]["changed"] is True
    finished = course_changes([act(0, "x y"), hint(1), Step(index=2, kind="final", text="42")])
    assert finished[1]["changed"] is True and finished[1]["finished"] is True
    assert course_changes([act(0, "x y"), hint(1, "stop")]) == {}
    assert course_changes([hint(0)]) == {}  # nothing after it (the run ended)
