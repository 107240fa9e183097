"""A final answer other than the one the agent's last thought concluded (tracing.core.anchoring.rules.against_conclusion.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tracing.helpers import Run
from tracing.core.anchoring.rules.against_conclusion import against, verdict_of

PAGE = "Alice Cooper (born Vincent Damon Furnier, February 4, 1948) is an American rock singer."


def _fever(thought: str, answer: str) -> Run:
    return (
        Run().thought("I should search Alice Cooper.").call("Search", "Alice Cooper").result("Search", PAGE)
        .thought(thought).final(answer)
    )


@pytest.mark.parametrize(("thought", "answer", "breaks"), [
    ("The observation says his real name is Vincent Damon Furnier, so the claim is true.", "REFUTES", True),
    ("The observation says his real name is Vincent Damon Furnier, so the claim is true.", "SUPPORTS", False),
    ("He was born in 1948, so the claim is false.", "SUPPORTS", True),
    ("He was born in 1948, so the claim is false.", "REFUTES", False),
    # No verdict stated, or two: nothing to hold the answer to.
    ("The observation says he is a rock singer.", "REFUTES", False),
    ("Some say the claim is true, others that it is false.", "SUPPORTS", False),
])
def test_a_verdict_other_than_the_one_concluded_is_a_break(thought, answer, breaks):
    rep = _fever(thought, answer).report()
    assert (rep.first_break == 4 and rep.evidence["pattern"] == "against_conclusion") is breaks, rep.reason
    if breaks:
        assert "step 3" in rep.reason and "step 4" in rep.reason


COMPARE = "First for Women is a magazine started in 1989. Arthur's Magazine was started in 1844."


@pytest.mark.parametrize(("answer", "breaks"), [
    ("First for Women", True),
    ("Arthur's Magazine", False),
    # Not named in the thought at all: the grounding rules judge it, not this one.
    ("Harper's Bazaar", False),
])
def test_an_answer_the_thought_set_aside_is_a_break(answer, breaks):
    run = (
        Run().call("Search", "First for Women").result("Search", COMPARE)
        .thought("1844 (Arthur's Magazine) < 1989 (First for Women), so Arthur's Magazine was started first.")
        .final(answer)
    )
    rep = run.report()
    assert (rep.first_break == 3 and rep.evidence["pattern"] == "against_conclusion") is breaks, rep.reason


def test_a_conclusion_without_a_name_holds_no_answer():
    assert against("Both were started in the 1800s, so the answer is yes.", "no") is None
    assert against("So the answer is the older one, First for Women.", "First for Women") is None
    assert verdict_of("He was born in 1948.") is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=60))
def test_junk_never_raises(thought, answer):
    result = against(thought, answer)
    assert result is None or isinstance(result, str)


@pytest.mark.parametrize("thought", [
    "The observation does not say if he is a sound mixer, so I cannot say if the claim is true or false.",
    "I could not find it, so I am not sure if this claim is true or not.",
    "I cannot find a movie with her name, so I do not think this claim is true.",
])
def test_a_weighed_verdict_is_no_verdict(thought):
    assert verdict_of(thought) is None


def test_a_conclusion_about_a_pronoun_holds_whoever_came_before():
    thought = "Sandi Patti was born in July, so she is the gospel singer David Huntsinger has worked with."
    assert against(thought, "Sandi Patti") is None
