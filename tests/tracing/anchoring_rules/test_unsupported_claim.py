"""unsupported_claim: a text ReAct agent over search and a tool-calling customer-service agent."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = "Wang Guowei (1877-1927) was a Chinese scholar, born in Hangzhou."


def _unsupported(run: Run, task: str = ""):
    return [b.step for b in run.report(task=task).breaks if b.pattern == "unsupported_claim"]


def test_a_birthplace_no_page_gives():
    run = Run().call("Search", "Wang Guowei").result("Search", PAGE).thought("Wang Guowei was born in Haiyan.")
    assert _unsupported(run, "Where was Wang Guowei born?") == [2]


def test_the_birthplace_the_page_gives():
    run = Run().call("Search", "Wang Guowei").result("Search", PAGE).thought("Wang Guowei was born in Hangzhou.")
    assert _unsupported(run, "Where was Wang Guowei born?") == []


def _order(said: str):
    return (Run().user("What is the total of order #W1234567?")
            .call("get_order_details", {"order_id": "#W1234567"})
            .result("get_order_details", {"order_id": "#W1234567", "total": 2895.55})
            .reply(said))


def test_a_total_no_result_holds():
    assert _unsupported(_order("The total of order #W1234567 is $3120.40.")) == [3]


def test_the_total_the_result_holds():
    assert _unsupported(_order("The total of order #W1234567 is $2,895.55.")) == []


def test_a_tool_named_in_a_claim_is_the_agents_vocabulary_not_an_invented_identifier():
    # Customer service: the claim names the tool it called; the failure rule judges it.
    run = (Run().user("What is the status of order #W1234567?")
           .call("get_order_details", {"order_id": "#W1234567"})
           .result("get_order_details", "Error: order not found")
           .reply("Done, the get_order_details call worked."))
    assert [(b.step, b.pattern) for b in run.report().breaks] == [(3, "unconfirmed_success")]
    # Code agent: a thought that names a tool from its schema before calling it.
    run = (Run().user("How many singers are there?")
           .thought("I will use run_sql to count the rows of the singer table."))
    tools = {"tools": [{"name": "run_sql", "parameters": {}}]}
    assert [b.pattern for b in run.report(context=tools).breaks if b.pattern == "unsupported_claim"] == []


def test_a_models_markup_tags_are_not_words_of_its_answer():
    # Claude-style <thinking> / <search_quality_reflection> tags around a report.
    run = (Run().user("What is the Facebook security code in my inbox?")
           .call("search_emails", {"query": "Facebook security code"})
           .result("search_emails", "- body: 'Your Facebook security code is: 463820'\n  sender: security@facebook.com")
           .final("<search_quality_reflection>\nThe search found the email.\n</search_quality_reflection>\n"
                  "<result>\nYour Facebook security code is 463820.\n</result>"))
    assert _unsupported(run) == []


def test_a_long_report_is_judged_by_its_values_not_its_words():
    # In a paragraph to the user most words are language; a short answer is judged by its words.
    run = (Run().user("How long before my lunch with Sarah on 2024-05-15?")
           .call("get_day_calendar_events", {"day": "2024-05-15"})
           .result("get_day_calendar_events", "- title: Team Sync\n  end_time: 2024-05-15 11:00\n"
                                              "- title: Lunch with Sarah\n  start_time: 2024-05-15 12:30")
           .final("According to the calendar, your meeting ends at 11:00 and the lunch with Sarah starts at 12:30, "
                  "so you have one hour and thirty minutes to get there comfortably."))
    assert _unsupported(run) == []
    short = (Run().call("Search", "Wang Guowei").result("Search", PAGE)
             .final("political science"))
    assert _unsupported(short, "What did Wang Guowei study?") != []


def test_a_tool_named_in_a_report_is_not_a_value_it_misread():
    run = (Run().user("What is on my calendar today?")
           .call("get_day_calendar_events", {"day": "2024-05-15"})
           .result("get_day_calendar_events", "- title: Team Sync\n- title: Lunch with Sarah")
           .final("According to the result of `get_day_calendar_events`, you have Team Sync and Lunch with Sarah."))
    assert _unsupported(run) == []
