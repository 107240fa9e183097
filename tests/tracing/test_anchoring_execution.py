"""Anchoring of code and shell agents on their own runs (tracing/core/anchoring/code_claims.py).

Each rule is tested on both sides: the lapse breaks, the grounded neighbour does not.
"""

from __future__ import annotations

from tests.tracing.helpers import Run
from tracing.core.anchoring.code_claims import claims_output, reports_outcome, schema_names

SILENT = "[Executed Successfully with No Output]\nYou have 3 steps left and 2 chances to propose solution left."




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
    return r.thought(claim).final(CODE, tool="solution")


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
    habit = Run().thought("I will test it on the examples.").thought("The code works as expected.").final(CODE, tool="solution")
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
            .thought(claim).final(CODE, tool="solution"))


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


# --- names in a database or file system are read ------------------------------------------


def _tables(listing: str, thought: str, then: tuple[str, str] | None = None) -> Run:
    r = (Run().thought("I should find out what tables are available in this database.")
         .run("sql", "SHOW TABLES").result("sql", listing).thought(thought))
    if then:
        r.run("sql", then[0]).result("sql", then[1])
    return r


TASK = "List the airport code and name in the city of Anthony."


def test_a_table_only_the_listing_could_name_after_the_listing_came_back_empty():
    rep = _tables("[]", "The airports table should have the airport code and name.").report(TASK)
    assert rep.first_break == 3 and rep.evidence["pattern"] == "unsupported_claim" and "airports" in rep.reason
    failed = "Error executing query: You have an error in your SQL syntax; check the manual near 'TABLES'"
    assert _tables(failed, "The `airports` table should have the codes.").report(TASK).first_break == 3


def test_a_table_the_listing_showed_or_the_task_names_is_grounded():
    listed = "[('airlines',), ('airports',), ('flights',)]"
    assert _tables(listed, "The airports table should have the airport code and name.").report(TASK).first_break is None
    named = "List the names of rows of the airports table in the city of Anthony."
    assert _tables("[]", "The airports table should have the code and name.").report(named).first_break is None


def test_a_plan_or_a_guess_tried_and_failed_is_exploration():
    assert _tables("[]", "I should check if there is an airports table.").report(TASK).first_break is None
    guess = _tables("[]", "The airports table should have the codes.",
                    then=("DESC airports", "Error executing query: Table 'db.airports' doesn't exist"))
    assert guess.report(TASK).first_break is None


def test_schema_names_reads_named_tables_columns_and_files():
    assert schema_names("The airports table has the codes.") == ["airports"]
    assert schema_names("The `Template_Type_Code` column holds it.") == ["Template_Type_Code"]
    assert schema_names("The flag.txt file contains the flag.") == ["flag.txt"]
    assert schema_names("The available columns are id and name.") == []
    assert schema_names("I should check if the singer table exists.") == []


def test_a_plan_naming_an_unlisted_table_is_not_a_claim():
    # A plan is not a claim, even one that takes the table as existing; its
    # next call will show whether the table is there.
    desc = ("DESC airports", "[('code', 'char(3)'), ('name', 'text'), ('city', 'text')]")
    plan = "I should check if the airports table has the codes and names."
    assert _tables("[]", plan, then=desc).report(TASK).first_break is None
