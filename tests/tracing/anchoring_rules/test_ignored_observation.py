"""ignored_observation: a text ReAct agent over search and a tool-calling customer-service agent."""

from __future__ import annotations

from tests.tracing.helpers import Run

PAGE = ("Wang Guowei (1877-1927) was a Chinese scholar born in Haiyan, Zhejiang. He studied in Tokyo "
        "and taught at Tsinghua University with Liang Qichao and Chen Yinke.")
TASK = "Which university did Wang Guowei teach at?"


def _ignored(run: Run, task: str = TASK):
    return [b.step for b in run.report(task=task).breaks if b.pattern == "ignored_observation"]


def test_a_page_of_new_facts_the_next_thought_passes_over():
    run = (Run().call("Search", "Wang Guowei").result("Search", PAGE)
           .thought("I should look for other scholars of the Qing dynasty instead, maybe Kang Youwei or Yan Fu.")
           .call("Search", "Kang Youwei").result("Search", "Kang Youwei was a reformer."))
    assert _ignored(run) == [2]


def test_the_next_thought_takes_the_page_up():
    run = (Run().call("Search", "Wang Guowei").result("Search", PAGE)
           .thought("He studied in Tokyo and taught at Tsinghua University.").final("Tokyo; Tsinghua University"))
    assert _ignored(run) == []


def _failed(said: str):
    return (Run().user("Please switch me to plan P1010.")
            .call("change_plan", {"plan_id": "P1010"}).result("change_plan", "Error: Plan with ID P1010 not found")
            .reply(said))


def test_a_failed_call_the_reply_passes_over():
    assert _ignored(_failed("All set! Enjoy your new plan."), task="") == [3]


def test_a_failed_call_the_reply_reports():
    assert _ignored(_failed("I couldn't find plan P1010. Could you check the plan id?"), task="") == []
