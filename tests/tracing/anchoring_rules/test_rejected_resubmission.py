"""rejected_resubmission: a code agent (solution tool) and a text ReAct agent (Finish)."""

from __future__ import annotations

from tests.tracing.helpers import Run

CODE = "def f(x):\n    return x + 1"


def _patterns(rep):
    return [b.pattern for b in rep.breaks]


def test_code_resubmitted_after_rejection():
    run = (Run().call("solution", CODE).result("solution", "Your answer is wrong.\nYou have 3 steps left.")
           .thought("I think it is right after all.").final(CODE, tool="solution", args=CODE))
    rep = run.report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "rejected_resubmission"


def test_code_changed_after_rejection_is_no_resubmission():
    fixed = "def f(x):\n    return x + 2"
    run = (Run().call("solution", CODE).result("solution", "Your answer is wrong.\nYou have 3 steps left.")
           .thought("The offset must be 2.").final(fixed, tool="solution", args=fixed))
    assert "rejected_resubmission" not in _patterns(run.report())


def test_text_answer_resubmitted_after_rejection():
    run = (Run().call("Search", "Alvin Hall").result("Search", "Alvin Hall was born in Aurora.")
           .call("Finish", "Aurora").result("Finish", "Your answer is wrong.")
           .thought("I am sure it is Aurora.").call("Finish", "Aurora"))
    assert "rejected_resubmission" in _patterns(run.report())


def test_text_answer_accepted_then_repeated_is_no_resubmission():
    run = (Run().call("Search", "Alvin Hall").result("Search", "Alvin Hall was born in Aurora.")
           .call("Finish", "Aurora").result("Finish", "Episode finished.")
           .thought("Done.").call("Finish", "Aurora"))
    assert "rejected_resubmission" not in _patterns(run.report())
