"""wrong_record: a value of one record attributed to another.

Agents that juggle several records (two orders, a user and the account a
lookup returned instead, the items of one order and another's) lose track of
which value belongs to which: the second order gets the first one's total,
the user is addressed with the name of the record a mistyped id returned, an
item is placed in an order it is not part of. Each value was observed; it is
the attribution that the results contradict.

Evidence: ``strength.EVIDENCE["wrong_record"]`` ("contradicted by the
record", strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tracing.core.anchoring.common import LIST_MARK_RE, Break, quote, what
from tracing.core.steps import Step
from tracing.core.tokenizer import split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "wrong_record"

# A statement that says a result is not the one asked for.
_MISMATCH_RE = re.compile(
    r"\b(?:different|mismatch|does(?:n't| not) match|not the (?:same|one|right)|wrong|another (?:user|order|account|"
    r"record|customer|product)|instead)\b", re.IGNORECASE)


def record_break(step: Step, slip: dict[str, Any], sentence: str) -> list[Break]:
    # Values are matched lower-cased; the reason quotes the words as written ("T-Shirt").
    written = re.search(re.escape(slip["said"]), sentence, re.IGNORECASE)
    said = written.group(0) if written else slip["said"]
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the {what(step)} at step {step.index} gives {slip['record']} the {slip['field']} "
        f"“{said}”, which belongs to {slip['belongs_to']}; {slip['record']} has “{slip['own']}” "
        f"(result at step {slip['step']}): {quote(sentence, 100)}"
    ), evidence={**slip, "claim": sentence[:200]})]


def other_answer(state: RunState, step: Step, text: str) -> list[Break]:
    """The call asked for one record and the result is another's
    (get_user_details(mia_garcia_4516) answered with ivan_johnson_6036);
    the next statement goes on without a word about it."""
    other = state.since.answered_other
    if other is None:
        return []
    result_at, call_at, key, asked, got = other
    if got in text.lower() or _MISMATCH_RE.search(text):
        return []  # it noticed
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the call at step {call_at} asked for {key} {asked}, but the result at step {result_at} is for "
        f"{got}; the {what(step)} at step {step.index} goes on as if it were {asked}'s"
    ), evidence={"call_step": call_at, "result_step": result_at, "field": key, "asked": asked, "returned": got})]


def named_record(state: RunState, step: Step, text: str) -> list[Break]:
    """A record named by its id (or the user's own thing) with another's
    label or values, or a thing placed in a record it is not part of:
    judged in plans and questions too."""
    records = state.records
    if not records.latest:
        return []
    header = ""  # the line ending in ":" that a list under it belongs to
    for sentence in split_sentences(text):
        listed = bool(header) and LIST_MARK_RE.match(sentence) is not None
        slip = records.labelled_id(sentence) or records.owned_line(sentence)
        if slip is not None:
            return record_break(step, slip, sentence)
        slip = records.foreign_member(sentence)
        if slip is not None:
            return [Break(step=step.index, pattern=NAME, reason=(
                f"the {what(step)} at step {step.index} places {slip['said']} in {slip['record']}, whose lines "
                f"are {slip['own']} (result at step {slip['step']}); it is {slip['belongs_to']}'s: "
                f"{quote(sentence, 100)}"
            ), evidence={**slip, "claim": sentence[:200]})]
        slip = records.listed_member(header, sentence) if listed else None
        if slip is not None:
            return record_break(step, slip, sentence)
        header = sentence if sentence.endswith(":") else header if listed else ""
    return []
