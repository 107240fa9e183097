"""Which breaks are shown (strong) and which are findings (weak): tracing.core.anchoring.strength.

Each case from two agent families: a text ReAct agent over a search tool and a
tool-calling agent with JSON results.
"""

from __future__ import annotations

from tests.tracing.helpers import Run
from tracing.core.anchoring import anchor_report
from tracing.core.anchoring.strength import EVIDENCE, STRONG, WEAK, WEAK_PATTERNS, evidence_of, is_shown

HANGZHOU = "Wang Guowei (born 1877 in Hangzhou) was a Chinese scholar of history and literature."


def _report(run: Run, task: str = "", **kw):
    return anchor_report(run.steps, task, **kw)


# --- a value nothing observed supports: a finding, not the break -------------


def test_an_unsupported_name_is_a_finding_not_the_shown_break_text_react():
    run = (Run().command("Search[Wang Guowei]", tool="Search").result("Search", HANGZHOU)
           .thought("Wang Guowei was born in Haiyan.").final("Haiyan"))
    rep = _report(run, "Where was Wang Guowei born?")
    assert rep.first_break is None
    assert rep.first_finding == 2
    listed = rep.to_dict()["anchor_findings"]
    assert listed[0]["pattern"] == "unsupported_claim" and listed[0]["strength"] == WEAK
    assert "Haiyan" in listed[0]["reason"]
    # With the pattern promoted (a project that trusts it), it is the break.
    assert _report(run, "Where was Wang Guowei born?", promoted=frozenset(["unsupported_claim"])).first_break == 2


def test_an_unsupported_number_is_a_finding_not_the_shown_break_tool_calling():
    run = (Run().user("What is the balance of account 4410?")
           .call("get_account", {"account_id": "4410"})
           .result("get_account", {"account_id": "4410", "balance": 1250.75})
           .reply("The balance of account 4410 is $1,870.20."))
    rep = _report(run)
    assert rep.first_break is None
    assert rep.first_finding == 3


def test_a_value_the_agent_says_it_read_in_the_result_that_the_result_lacks_is_strong():
    run = (Run().command("Search[Wang Guowei]", tool="Search").result("Search", HANGZHOU)
           .thought("The observation says Wang Guowei was born in Haiyan.").final("Haiyan"))
    rep = _report(run, "Where was Wang Guowei born?")
    assert rep.first_break == 2
    assert rep.evidence["evidence_kind"] == EVIDENCE["misread_result"].kind
    plain = (Run().command("Search[Wang Guowei]", tool="Search").result("Search", HANGZHOU)
             .thought("Wang Guowei was born in Haiyan.").final("Haiyan"))
    assert _report(plain, "Where was Wang Guowei born?").first_break is None


# --- asking again -------------------------------------------------------------


def test_a_failed_call_repeated_unchanged_is_a_strong_break_both_families():
    text = (Run().command("Search[Zzyzx Qqq]", tool="Search").result("Search", "Could not find Zzyzx Qqq.")
            .command("Search[Zzyzx Qqq]", tool="Search").result("Search", "Could not find Zzyzx Qqq."))
    rep = _report(text)
    assert rep.first_break == 2 and rep.evidence["pattern"] == "requery"
    assert rep.evidence["strength"] == STRONG
    calls = (Run().call("get_order", {"order_id": "W1"}).result("get_order", "Error: order not found")
             .call("get_order", {"order_id": "W1"}).result("get_order", "Error: order not found"))
    assert _report(calls).first_break == 2


def test_a_state_read_again_with_no_arguments_is_a_finding():
    run = (Run().command("inventory").result("inventory", "Inventory: [stone] (4)")
           .command("get 8 bricks", tool="get").result("get", "Could not find bricks")
           .command("inventory").result("inventory", "Inventory: [stone] (4)"))
    rep = _report(run)
    assert rep.first_break is None and rep.first_finding == 4
    calls = (Run().call("check_status_bar", {}).result("check_status_bar", "Signal: none")
             .call("check_status_bar", {}).result("check_status_bar", "Signal: none"))
    rep = _report(calls)
    assert rep.first_break is None and rep.first_finding == 2


# --- demotion -------------------------------------------------------------------


def test_a_demoted_pattern_is_a_finding_in_that_report_only():
    run = (Run().command("Search[Zzyzx Qqq]", tool="Search").result("Search", "Could not find Zzyzx Qqq.")
           .command("Search[Zzyzx Qqq]", tool="Search").result("Search", "Could not find Zzyzx Qqq."))
    assert _report(run, demoted=frozenset(["requery"])).first_break is None
    assert _report(run, demoted=frozenset(["requery"])).first_finding == 2
    assert _report(run).first_break == 2


def test_the_table_names_every_pattern_and_the_weak_ones():
    from tracing.core.anchoring import PATTERNS

    assert set(PATTERNS) <= set(EVIDENCE)
    assert {p for p in PATTERNS if evidence_of(p).strength == WEAK} == WEAK_PATTERNS
    assert is_shown("requery", STRONG) and not is_shown("requery", STRONG, ["requery"])
    assert not is_shown("unsupported_claim", WEAK)


def test_a_bare_get_obtains_so_a_failed_call_retried_after_it_is_not_asked_again():
    # "get 1 green dye" then the craft that had failed: the world changed.
    run = (Run().command("craft 2 lime dye using 1 green dye", tool="craft")
           .result("craft", "Could not find enough items to craft lime dye")
           .command("get 1 green dye", tool="get").result("get", "Got 1 green dye")
           .command("craft 2 lime dye using 1 green dye", tool="craft")
           .result("craft", "Could not find enough items to craft lime dye"))
    assert _report(run).first_break is None
    # A getter that names what it reads changes nothing: the retry is the same question.
    calls = (Run().call("cancel_order", {"order_id": "W1"}).result("cancel_order", "Error: order is delivered")
             .call("get_order_details", {"order_id": "W1"}).result("get_order_details", {"status": "delivered"})
             .call("cancel_order", {"order_id": "W1"}).result("cancel_order", "Error: order is delivered"))
    assert _report(calls).first_break == 4


def test_a_heading_or_status_line_is_form_not_a_claim():
    base = Run().command("inventory").result("inventory", "Inventory: [oak planks] (4)")
    assert _report(Run(), promoted=frozenset(["unsupported_claim"])).first_finding is None
    run = Run()
    run.steps = list(base.steps)
    run.thought("Task Completed!")
    assert _report(run, promoted=frozenset(["unsupported_claim"])).first_break is None
    calls = (Run().call("get_order", {"order_id": "W1"}).result("get_order", {"status": "shipped"})
             .reply("## Order Summary\nYour order W1 has shipped."))
    assert _report(calls, promoted=frozenset(["unsupported_claim"])).first_break is None
    # A bare name is an answer, not a heading: still judged.
    named = Run()
    named.steps = list(base.steps)
    named.thought("Haiyan Zhejiang.")
    assert _report(named, promoted=frozenset(["unsupported_claim"])).first_break == 2


# --- grounding from the run's own forms (tracing.core.anchoring.evidence) ---------

from tracing.core.anchoring.evidence import Evidence, defined_names  # noqa: E402
from tracing.core.anchoring.salience import extract  # noqa: E402


def _evidence(*texts: str) -> Evidence:
    ev = Evidence()
    for text in texts:
        ev.add(extract(text), text)
    return ev


def test_a_reference_in_another_form_is_the_same_reference():
    ev = _evidence('{"resourceType": "Patient", "id": "Patient/8123"}', "order #W2890441")
    assert ev.number_supported("8123") and ev.number_supported("2890441")
    assert not ev.number_supported("2890442")
    assert not _evidence("order #W28").number_supported("28")  # a short tail is a count, not a reference


def test_a_date_inside_a_timestamp_backs_the_date_and_its_parts():
    ev = _evidence('{"issued": "2024-05-17T10:00:00+00:00"}')
    assert ev.date_supported("2024-05-17") and ev.date_supported("05-17")
    assert ev.number_supported("17") and ev.number_supported("2024")
    assert ev.date_supported("2024-05-24")  # a week later: a stated step
    assert not ev.date_supported("2024-05-29")


def test_an_age_from_two_years_read_is_derived_not_invented():
    ev = _evidence("born 1979-03-02", "today is 2024-05-17")
    assert ev.number_supported("45") and ev.number_supported("44")
    assert not ev.number_supported("52")


def test_codes_and_their_names_are_common_knowledge_both_ways():
    assert _evidence("Total: 45.20 USD").entity_supported(("us", "dollars"))
    assert _evidence("ships to Germany").word_supported("de")
    assert not _evidence("ships to Germany").word_supported("france")


def test_a_name_the_agent_defines_is_its_own():
    assert defined_names("so arr_h is 11 and total_cost = 45") == {"arr_h", "total_cost"}
    assert defined_names("The poker_player table has 5 rows") == set()
    run = (Run().command("Search[train times]", tool="Search").result("Search", "The train leaves at 9 and arrives at 11.")
           .thought("So arr_h is 11, two hours after the departure."))
    assert _report(run, promoted=frozenset(["unsupported_claim"])).first_break is None
