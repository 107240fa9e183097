"""against_conclusion: a FEVER-style verdict agent and a multi-hop search agent."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = "Alice Cooper (born Vincent Damon Furnier, February 4, 1948) is an American rock singer."
COMPARE = "First for Women is a magazine started in 1989. Arthur's Magazine was started in 1844."
COMPARED = "1844 (Arthur's Magazine) < 1989 (First for Women), so Arthur's Magazine was started first."


def _fever(answer: str):
    return (Run().call("Search", "Alice Cooper").result("Search", PAGE)
            .thought("His real name is Vincent Damon Furnier, so the claim is true.").final(answer).report())


def test_a_verdict_against_the_thought():
    rep = _fever("REFUTES")
    assert rep.first_break == 3 and rep.evidence["pattern"] == "against_conclusion"


def test_the_verdict_the_thought_reached():
    assert all(b.pattern != "against_conclusion" for b in _fever("SUPPORTS").breaks)


def _compare(answer: str):
    return Run().call("Search", "First for Women").result("Search", COMPARE).thought(COMPARED).final(answer).report()


def test_the_name_the_thought_set_aside():
    rep = _compare("First for Women")
    assert rep.first_break == 3 and rep.evidence["pattern"] == "against_conclusion"


def test_the_name_the_thought_concluded():
    assert all(b.pattern != "against_conclusion" for b in _compare("Arthur's Magazine").breaks)
