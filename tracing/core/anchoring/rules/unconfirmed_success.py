"""unconfirmed_success: success, or data, claimed right after an error, an
empty result, "Nothing happens.", a rejected answer.

Agents lose track of how their last call went: the result said it failed
and the next sentence says it worked ("Your payment method has been
changed" right after the change was refused), or states what the failed
call would have returned (a table's columns after ``DESC`` failed, an
order's details after its lookup came back empty), or what a program printed
when it printed nothing, or "now I take the apple" when the result shows no
apple. The claim reads the result it wished for, not the one it got.

Evidence: ``strength.EVIDENCE["unconfirmed_success"]`` ("failure read as
success", strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracing.core.anchoring.code_claims import claims_output, code_checks
from tracing.core.anchoring.common import (
    NONE_COUNT_RE,
    Break,
    args_text,
    asserting_sentences,
    call_text,
    names_id,
    quote,
    raw_args,
    sentence_words,
    unsupported_units,
    what,
)
from tracing.core.anchoring.evidence import Evidence
from tracing.core.anchoring.phrases import (
    ACK_FAILURE_RE,
    ASSERTION_RE,
    CODE_SUCCESS_RE,
    DATA_CLAIM_RE,
    DENIED_FAILURE_RE,
    EMPTY_CONTENT_RE,
    FOUND_RE,
    LOOKED_UP_RE,
    NEGATED_RE,
    NOW_ACTION_RE,
    PRESENT_DATA_RE,
    SUCCESS_RE,
)
from tracing.core.anchoring.salience import FILLER_WORDS, extract
from tracing.core.normalize import tokens
from tracing.core.results import is_command, is_read_call
from tracing.core.steps import Step, is_reply
from tracing.core.tokenizer import split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import Observed, RunState

NAME = "unconfirmed_success"

# "Now I <verb> X" verbs that say X is at hand: what the agent holds needs no sighting.
_AT_HAND_VERBS = ("find", "found", "see", "locate", "have", "get", "got")
# A record's state named as such ("delivered", "pending", "suspended").
_STATE_WORD_RE = re.compile(
    r"\b(?:pending|delivered|cancell?ed|processed|shipped|returned|exchanged|active|suspended|paid|overdue)\b",
    re.IGNORECASE)
# Reasoning about a failure ("I suspect the issue is …", "because"), not a
# claim about what the failed call returned.
REASONING_RE = re.compile(
    r"\b(?:issue|problem|bug|suspect|because|reason|fix|mistake|incorrect|expected|instead|typo|missing|"
    r"should|need|requires?|must|might|maybe|probably|seems?)\b",
    re.IGNORECASE,
)


def _brk(step: Step, reason: str, evidence: dict) -> list[Break]:
    return [Break(step=step.index, pattern=NAME, reason=reason, evidence=evidence)]


def asked_words(action: Step) -> set[str]:
    """The content words a call asked with."""
    return {w for w in tokens(call_text(action)) if len(w) >= 3 and not w.isdigit() and w not in FILLER_WORDS}


def unanswered_details(state: RunState, step: Step, text: str) -> list[Break]:
    """A record's details stated right after its lookup came back empty or
    failed ("3. Order #W6111398 (Status: Cancelled) - Skateboard" when
    get_order_details(#W6111398) answered null), and no earlier result
    held that record."""
    unanswered = state.since.unanswered
    if not unanswered:
        return []
    known = {ident for _, ident in state.records.latest}
    for sentence in split_sentences(text):
        if NEGATED_RE.search(sentence) or ACK_FAILURE_RE.search(sentence) or sentence.rstrip().endswith("?"):
            continue
        low = sentence.lower()
        for ident, (call_at, result_at) in unanswered.items():
            if ident in known or not names_id(low.replace("#", ""), ident):
                continue
            if _STATE_WORD_RE.search(sentence) or any(
                    t != ident and t in state.records.owners for t in sentence_words(sentence)):
                return _brk(step, (
                    f"the lookup of {ident} at step {call_at} came back with nothing (result at step "
                    f"{result_at}); the {what(step)} at step {step.index} states its details: "
                    f"{quote(sentence, 100)}"
                ), {"call_step": call_at, "result_step": result_at, "asked": ident, "claim": sentence[:200]})
    return []


def done_by_failed_call(state: RunState, step: Step, text: str) -> list[Break]:
    """Of a batch of calls, the one for #W6729841 failed; "Order #W6729841:
    the air purifier has been changed" reports it done. A claim is judged
    against the call it names by id, whatever the other calls returned."""
    failed_ids = state.since.failed_ids
    if not failed_ids:
        return []
    for sentence in asserting_sentences(text):
        if NEGATED_RE.search(sentence) or ACK_FAILURE_RE.search(sentence):
            continue
        if not (state.completion(sentence) or SUCCESS_RE.search(sentence)):
            continue
        low = sentence.lower().replace("#", "")
        for ident, (call_at, result_at) in failed_ids.items():
            if names_id(low, ident):
                return _brk(step, (
                    f"the call at step {call_at} for {ident} failed (result at step {result_at}); the "
                    f"{what(step)} at step {step.index} reports it done: {quote(sentence, 100)}"
                ), {"call_step": call_at, "result_step": result_at, "asked": ident, "claim": sentence[:200]})
    return []


def after_failure(state: RunState, step: Step, sentence: str) -> list[Break]:
    """Right after a failed (or empty) result, a claim of success or of what it held."""
    last = state.last
    plain = DENIED_FAILURE_RE.sub("", sentence)
    if last is None or NEGATED_RE.search(plain) or ACK_FAILURE_RE.search(plain):
        return []
    if NONE_COUNT_RE.search(sentence):
        return []  # "Now I find an apple (0)": a count of none, and it keeps looking
    success = SUCCESS_RE.search(sentence) or CODE_SUCCESS_RE.search(sentence) or (
        # "Your payment method has been changed" right after the change
        # failed; "I have verified your account" right after the lookup did.
        (LOOKED_UP_RE.search(sentence) or state.completion(sentence)) if last.failed else None
    )
    if success and _found_nothing(last):
        # After a query that found nothing, only a claim of having found or
        # got something is false; "I am done" may be right.
        success = FOUND_RE.search(sentence)
    data = (DATA_CLAIM_RE.search(sentence) or (last.failed and PRESENT_DATA_RE.search(sentence))) \
        and not EMPTY_CONTENT_RE.search(sentence)
    whole_batch = all(state.batch or [True])
    if not data and last.failed and whole_batch:
        # "The `teacher` table has a Name column" right after DESC teacher
        # failed: an assertion about what the failed call asked for.
        data = ASSERTION_RE.search(sentence) is not None and _about_failed_call(sentence, last)
        if data and _found_nothing(last) and not _beyond_known(state, sentence):
            # After a read that found nothing, a statement about what it asked
            # for made only of what was known before ("External_0 has 0
            # messages") reads the emptiness; it does not claim a value.
            data = False
    if not (success or data):
        return []
    now = NOW_ACTION_RE.search(sentence)
    if last.failed and now and state.done_before(now.group("verb"), sentence[now.end():]):
        return []  # "Now I cool the potato" after it did, then bumped into "Nothing happens."
    if last.failed and whole_batch:
        claim = "success" if success else "what the result holds"
        return _brk(step, (
            f"the observation at step {last.step.index} reports a failure "
            f"({quote(last.step.text or '(empty)', 80)}); the {what(step)} at step {step.index} claims "
            f"{claim}: {quote(sentence, 100)}"
        ), {"observation_step": last.step.index, "observation": quote(last.step.text or "(empty)", 120),
            "claim": sentence[:200]})
    return _not_shown(state, step, sentence, last, now)


def _not_shown(state: RunState, step: Step, sentence: str, last: Observed, now: re.Match | None) -> list[Break]:
    """"Now I take the apple" when the latest result shows no apple; "I have
    found the apple" when no result of the run showed one."""
    if not FOUND_RE.search(sentence) or last.reading.form != "text" or is_reply(step) or step.kind == "final":
        # Only "found it" / "now I take X" names what the latest result
        # should show; a reply to the user or the final answer reports the
        # whole run, so any earlier result.
        return []
    if now and now.group("verb").lower() in state.next_calls.get(step.index, set()):
        return []  # "Now I put the watch in the safe." said of the put it goes on to make
    local = Evidence()
    local.add(last.sal)
    if last.action is not None:
        # What the call asked with is what it found: "the car rentals in Los
        # Angeles" after a search called with city="Los Angeles".
        local.add(extract(call_text(last.action)))
    # The tools' names are the agent's own vocabulary, not a sighting.
    local.words |= state.catalogue
    local.ids |= state.catalogue
    if not now or now.group("verb").lower() in _AT_HAND_VERBS:
        # Finding what it holds needs no sighting; cleaning it still needs a call.
        local.ids |= state.held
    local.id_heads = state.evidence.id_heads
    missing = [u for u in unsupported_units(extract(sentence), local) if not u[:1].isdigit()]
    if not now:
        # "I have found X" reports the run so far, not the latest sighting:
        # X is missing only when nothing observed in the run holds it.
        # "Now I find X" says what the latest result shows (the room it walked into).
        anywhere = set(unsupported_units(extract(sentence), state.evidence))
        missing = [u for u in missing if u in anywhere]
    if not missing:
        return []
    return _brk(step, (
        f"the {what(step)} at step {step.index} claims {quote(sentence, 100)}, but the observation "
        f"at step {last.step.index} ({quote(last.step.text or '', 80)}) does not show "
        f"{', '.join(missing[:3])}"
    ), {"observation_step": last.step.index, "observation": quote(last.step.text or "", 120),
        "claim": sentence[:200], "missing": missing[:5]})


def _beyond_known(state: RunState, sentence: str) -> bool:
    """Whether ``sentence`` states a value no earlier result, the task or the
    call itself holds: what only the empty result could have held."""
    return bool(unsupported_units(extract(sentence), state.evidence, sentence))


def _found_nothing(last: Observed) -> bool:
    """An empty answer of a read (``[]`` from a SELECT, no output from
    find): nothing found, which may be the answer. An empty result of an
    action ("Nothing happens." after "take") is its failure."""
    action = last.action
    if last.reading.status != "empty" or last.reading.form == "text" or action is None:
        return False  # "Could not find X" is a search that failed, not an empty answer
    return is_read_call(action.tool, raw_args(action))


def _about_failed_call(sentence: str, last: Observed) -> bool:
    """The sentence asserts something about what a failed read asked for
    (a command, a query or a function call; a failed text search is often
    followed by what the model knows, judged as a claim like any other)."""
    action = last.action
    if action is None or REASONING_RE.search(sentence):
        return False
    args = raw_args(action)
    if not is_read_call(action.tool, args) or not (is_command(args) or isinstance(args, dict)):
        return False
    asked = asked_words(action) | {i for i in extract(args_text(action.args) or "").ids if "_" in i}
    said = set(tokens(sentence)) | extract(sentence).ids
    return bool(asked & said)


def silent_output(state: RunState, step: Step, sentence: str) -> list[Break]:
    """Right after a run that printed nothing, a claim of what it printed."""
    last = state.last
    if last is None or last.failed or not state.results_since_statement or last.action is None:
        return []
    reading = last.reading
    if reading.form != "empty" and not (reading.status == "empty" and reading.data in ([], (), {}, "")):
        return []
    asserts, prints = code_checks(call_text(last.action))
    if not claims_output(sentence, asserts=asserts, prints=prints):
        return []
    shown = (last.step.text or "").strip() or "(no output)"
    return _brk(step, (
        f"the run at step {last.action.index} gave no output (result at step {last.step.index}: "
        f"{quote(shown, 60)}); the {what(step)} at step {step.index} says what it showed: {quote(sentence, 100)}"
    ), {"observation_step": last.step.index, "observation": quote(shown, 120), "claim": sentence[:200]})
