"""Detector reasons in Chinese: the sentence translated, the agent's words as they were (issue 30)."""

from __future__ import annotations

import pytest
from django.utils import translation

from runs.core.anchor_reasons import anchor_reason

REASON = ("the thought at step 3 says “I already called refund() and it worked; done”, but nothing was run yet")


def test_a_reason_is_translated_around_the_quoted_agent_text():
    with translation.override("zh-hans"):
        shown = anchor_reason(REASON)
    assert shown == "第 3 步的思考 (Thought)说 “I already called refund() and it worked; done”，但当时还没有运行过任何东西"


def test_clauses_are_translated_one_by_one():
    reason = ("the submission at step 7 is the one step 4 made, which the environment rejected at step 5 "
              "(“wrong answer”); it was sent again unchanged")
    with translation.override("zh-hans"):
        assert anchor_reason(reason) == ("第 7 步的提交与第 4 步的提交相同，而环境已在第 5 步拒绝了它（“wrong answer”）"
                                         "；它被原样再次提交")


def test_english_and_unknown_reasons_stay_as_they_are():
    assert anchor_reason(REASON) == REASON  # English: as tracing wrote it
    unknown = "step 3 says the refund was made; no call made it"
    with translation.override("zh-hans"):
        assert anchor_reason(unknown) == unknown  # never half translated


# Reasons as the rules write them (tracing/core/anchoring/rules), one per sentence form.
RULE_REASONS = [
    "the observation at step 2 reports a failure (“Error: order not found”); the reply at step 3 claims success: "
    "“Done, the get_order_details call worked.”",
    "the reply at step 4 says status of l1001 is “active”, but the result at step 3 shows it is now “suspended”: "
    "“Your line L1001 is active.”",
    "the call at step 3 uses the id L1001, which no earlier result, user turn, the task or the context contains; the "
    "call at step 1 returned an error (“Error: Customer not found”)",
    "the thought at step 2 states 古斯塔夫, which no observation (nor the task) contains, and the final answer at step 3 "
    "(“古斯塔夫”) gives it: it comes from the model's own knowledge, not from the trace",
]


@pytest.mark.parametrize("reason", RULE_REASONS)
def test_the_rules_sentences_are_translated_and_their_quotes_kept(reason):
    import re

    with translation.override("zh-hans"):
        shown = anchor_reason(reason)
    assert shown != reason
    assert re.findall(r"“[^”]*”", shown) == re.findall(r"“[^”]*”", reason)  # the agent's words, as they were
    outside = re.sub(r"“[^”]*”", "", shown)
    assert not re.search(r"\b(at step|which|but|claims|says)\b", outside), shown
