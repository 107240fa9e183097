"""Anchoring of code and shell agents on their own runs (tracing/anchoring/execution.py).

Each rule is tested on both sides: the lapse breaks, the grounded neighbour does not.
"""

from __future__ import annotations

from tracing.anchoring import anchor_report
from tracing.anchoring.execution import claims_output, reports_outcome
from tracing.steps import Step

SILENT = "[Executed Successfully with No Output]\nYou have 3 steps left and 2 chances to propose solution left."


class Run:
    def __init__(self) -> None:
        self.steps: list[Step] = []

    def _add(self, **kw) -> Run:
        self.steps.append(Step(index=len(self.steps), **kw))
        return self

    def thought(self, text: str) -> Run:
        return self._add(kind="thought", text=text)

    def run(self, tool: str, code: str) -> Run:
        return self._add(kind="action", text=code, tool=tool, args=code)

    def result(self, tool: str, text: str) -> Run:
        return self._add(kind="observation", text=text, tool=tool)

    def final(self, text: str) -> Run:
        return self._add(kind="final", text=text, tool="solution", args=text)

    def report(self, task: str = ""):
        return anchor_report(self.steps, task=task)


CODE = "def double(x):\n    return 2 * x\n"


# --- an outcome needs a run ---------------------------------------------------------


def _planned_then(claim: str, *, run_between: bool) -> Run:
    r = (
        Run().thought("I will write the function and print a value.")
        .run("execute", CODE + "print(double(2))").result("execute", "4")
        .thought("It prints 4. Now I will test it on the examples from the task.")
    )
    if run_between:
        r.run("execute", CODE + "assert double(3) == 6").result("execute", SILENT)
    return r.thought(claim).final(CODE)


def test_an_outcome_reported_after_a_plan_with_nothing_run_between_is_a_phantom_run():
    rep = _planned_then("The output is correct. The function works as expected.", run_between=False).report()
    assert rep.first_break == 4 and rep.evidence["pattern"] == "phantom_call"
    assert "step 3" in rep.reason and "step 4" in rep.reason


def test_the_same_outcome_after_the_planned_run_is_grounded():
    rep = _planned_then("The tests passed. The function works as expected.", run_between=True).report()
    assert rep.first_break is None


def test_a_query_reported_as_worked_when_it_was_never_sent():
    def run(sent: bool) -> Run:
        r = (Run().thought("I should find out what tables are available.")
             .run("sql", "SHOW TABLES").result("sql", "[('poker_player',), ('people',)]")
             .thought("I should sort the earnings in descending order with a query on poker_player."))
        if sent:
            r.run("sql", "SELECT Earnings FROM poker_player ORDER BY Earnings DESC").result("sql", "[(596462.0,), (476090.0,)]")
        return r.thought("The query worked and I get a list of earnings in descending order.")

    task = "List the earnings of poker players in descending order."
    rep = run(sent=False).report(task)
    assert rep.first_break == 4 and rep.evidence["pattern"] == "phantom_call"
    assert run(sent=True).report(task).first_break is None


def test_a_restatement_or_a_forecast_is_not_a_phantom_run():
    # The previous statement plans nothing: this one restates the result both read.
    restated = (Run().run("execute", CODE + "print(double(2))").result("execute", "4")
                .thought("It prints 4, which is right.").thought("The function works as expected."))
    assert restated.report().first_break is None
    # "This should work" forecasts; it reports no run.
    forecast = _planned_then("This should work as expected on the examples.", run_between=False)
    assert forecast.report().first_break is None
    # Before anything ran at all, the habit is a finding elsewhere, not this break.
    habit = Run().thought("I will test it on the examples.").thought("The code works as expected.").final(CODE)
    assert habit.report().first_break is None


def test_reports_outcome_reads_claims_not_plans():
    assert reports_outcome("The query worked and I get a list of names.")
    assert reports_outcome("All tests passed.")
    assert not reports_outcome("I will check if the function works as expected.")
    assert not reports_outcome("The function did not work as expected.")
    assert not reports_outcome("This should pass the tests.")


# --- output needs output ---------------------------------------------------------------


def _silent(code: str, claim: str) -> Run:
    return (Run().thought("Let me run it.").run("execute", code).result("execute", SILENT)
            .thought(claim).final(CODE))


def test_a_printing_run_that_printed_nothing_backs_no_claim_about_its_output():
    rep = _silent(CODE + "print(double(2))", "My execute code block showed the expected output.").report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"
    assert "step 1" in rep.reason and "step 3" in rep.reason
    rep = _silent(CODE + "print(double(2))", "The output is correct.").report()
    assert rep.first_break == 3


def test_asserting_code_that_ran_silently_passed():
    code = CODE + "assert double(2) == 4\nassert double(0) == 0"
    assert _silent(code, "The tests passed, the function returns the expected result.").report().first_break is None
    assert _silent(code, "The code executed successfully and the output is as expected.").report().first_break is None
    # ...but it printed nothing, so it did not print 4.
    rep = _silent(code, "The output showed 4 for double(2).").report()
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"


def test_an_empty_shell_output_described_as_a_list():
    def run(out: str) -> Run:
        return (Run().thought("I can use `who` to list the users.").run("bash", "who | sort | uniq").result("bash", out)
                .thought("This printed a list of unique users who are logged in."))

    rep = run("").report("Print the unique users who are logged in")
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unconfirmed_success"
    assert run("root\nalice\n").report("Print the unique users who are logged in").first_break is None
    said_empty = (Run().run("bash", "find /tmp -name '*.txt'").result("bash", "")
                  .thought("The command did not produce any output, so there are no .txt files."))
    assert said_empty.report().first_break is None


def test_claims_output_by_what_the_code_did():
    assert claims_output("It printed the names.", asserts=False, prints=True)
    assert claims_output("The function works as expected.", asserts=False, prints=True)
    assert not claims_output("The function works as expected.", asserts=True, prints=False)
    assert not claims_output("The function works as expected.", asserts=False, prints=False)
    assert not claims_output("It printed nothing.", asserts=False, prints=True)
