"""ignored_observation: an informative, on-task result of which the next turn
uses nothing and which it does not acknowledge; or a failed call the reply
that follows neither reports nor takes up.

Agents stop reading: the search brought a page of new facts and the next
thought goes on from what it thought before, the result is about something
else than what was asked and the agent carries on as if it had answered, the
call failed ("Error: Plan with ID P1010 not found") and the reply to the user
goes on as if it had worked.

Evidence: ``strength.EVIDENCE["ignored_observation"]`` ("result not used",
weak: a turn may use a result without repeating its words).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tracing.core.anchoring.common import Break, args_text, quote, what
from tracing.core.anchoring.phrases import NEGATED_RE
from tracing.core.anchoring.salience import FILLER_WORDS
from tracing.core.normalize import EN_STOP_WORDS, action_key, tokens
from tracing.core.results import is_command
from tracing.core.steps import Step, is_reply

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "ignored_observation"

# An observation is informative when it brings at least this many new strong
# units (numbers, names, ids, CJK bigrams) not already in the context: "The
# drawer 1 is closed." brings none, a biography brings dozens.
MIN_INFORMATIVE_NEW_UNITS = 3

# The next turn "ignored" an observation when it takes up at most this many of
# the observation's units (0 = none at all: one shared name already shows the
# turn read it).
IGNORED_MAX_UPTAKE = 0

# ...and only when that turn itself says something substantive (this many
# salient units): a bare "OK." or an empty thought is not a decision.
IGNORED_MIN_TURN_UNITS = 3

# Ignored results are judged after search-like calls only: an argument of at
# most this many tokens. A program's output need not echo the program.
IGNORED_MAX_QUERY_TOKENS = 12

# A reply that says a call went wrong. A bare negation or "again" does not
# ("why MMS isn't working", "your line is active again"): it must be about
# what the call asked (see error_passed_over).
_SAYS_FAILED_RE = re.compile(
    r"\b(?:error|fail(?:ed|s|ure)?|unable|(?:n't|not) (?:able|find|found|locate|retrieve|access|work|succeed|go "
    r"through|possible|complete)|could(?:n't| not)|can(?:'t|not)|problem|wrong|invalid)\b",
    re.IGNORECASE,
)
# Words of an error message that say nothing of its content.
_ERROR_FILLER = frozenset(["error", "found", "failed", "failure", "invalid", "exception", "code", "message"])
# "I'm sorry, …", "Unfortunately, …", "It looks like …": a reply that breaks bad news.
APOLOGY_RE = re.compile(r"\b(?:sorry|unfortunately|apologi[sz]e|it (?:looks|seems) like|appears)\b", re.IGNORECASE)


def on_turn_end(state: RunState, step: Step | None, text: str) -> list[Break]:
    """The turn that followed the latest result, judged when the next observation comes (or the run ends)."""
    last = state.judged
    if last is None or state.turn_first is None or state.turn_ack or len(state.turn_units) < IGNORED_MIN_TURN_UNITS:
        return []
    action = last.action
    if last.reading.form != "text" or (action is not None and (
        is_command(action.args)
        or isinstance(action.args, dict)  # a function call: its result is data, not a page to quote
        or len(action_key(action.tool, action.args)[1]) > IGNORED_MAX_QUERY_TOKENS
    )):
        return []  # structured data and program output: uptake is not word overlap
    informative = not last.failed and last.relevant and len(last.new_units) >= MIN_INFORMATIVE_NEW_UNITS
    if not (last.off_query or informative):
        return []
    if state.sem is not None:
        if state.sem.similarity(" ".join(state.turn_texts)[:2000], (last.step.text or "")[:2000]) >= state.sem.used_min:
            return []
    # Any unit counts as use here, the echo of the query included: a turn
    # that builds on the page it asked for has not ignored it.
    elif len(state.turn_units & last.sal.units) > IGNORED_MAX_UPTAKE:
        return []
    if last.off_query:
        # The result is about something else than what was asked, and the
        # agent carries on as if it had answered.
        asked = sorted(u[2:] for u in last.query_units if not u.startswith("n:"))[:3]
        reason = (
            f"the observation at step {last.step.index} ({quote(last.step.text or '', 80)}) is not "
            f"about what was asked ({', '.join(asked)}); step {state.turn_first} carries on without "
            f"using it or saying so"
        )
        ev: dict[str, Any] = {"asked": asked, "observation_units": sorted(u[2:] for u in last.sal.strong_units)[:3]}
    else:
        sample = sorted(u[2:] for u in last.new_units if not u.startswith("t:"))[:5]
        reason = (
            f"the observation at step {last.step.index} brought new facts ({', '.join(sample)}); "
            f"the next step ({state.turn_first}) uses none of them and does not say why"
        )
        ev = {"new_units": sample}
    ev.update(observation_step=last.step.index, observation=quote(last.step.text or ""))
    return [Break(step=state.turn_first, pattern=NAME, reason=reason, evidence=ev)]


def _call_words(call: Step) -> set[str]:
    """The words a call asked with: its tool's name and its arguments."""
    return {w for w in tokens(f"{call.tool or ''} {args_text(call.args)}".replace("_", " "))
            if len(w) >= 3 and w not in EN_STOP_WORDS and w not in FILLER_WORDS}


def _error_words(call: Step, error: str) -> set[str]:
    """What an error message says beyond the call it answers: "Error: Order
    not found" after get_order_details says nothing more; "Payment method
    should be the original payment method" does."""
    asked = set(tokens(f"{call.tool or ''} {args_text(call.args)}".replace("_", " ")))
    return {w for w in tokens(error[:500]) if len(w) >= 3 and not w.isdigit() and w not in EN_STOP_WORDS
            and w not in FILLER_WORDS and w not in _ERROR_FILLER and w not in asked}


def error_passed_over(state: RunState, step: Step, text: str) -> list[Break]:
    """A function call failed ("Error: Plan with ID P1010 not found") and
    the reply to the user that follows neither says so nor takes up what
    the error said ("the refund must go to the original payment method"):
    it goes on as if the call had worked."""
    failed_calls = state.since.failed_calls
    if not failed_calls or not is_reply(step) or _SAYS_FAILED_RE.search(text) or APOLOGY_RE.search(text):
        return []
    said = set(tokens(text))
    for call, result in failed_calls:
        error = _error_words(call, result.text or "")
        if (error | _call_words(call)) & said and NEGATED_RE.search(text) or error & said:
            continue  # it answers the error's content, or denies something about what was asked
        return [Break(step=step.index, pattern=NAME, reason=(
            f"the call at step {call.index} failed ({quote(result.text or '', 80)}, step {result.index}); "
            f"the {what(step)} at step {step.index} neither says so nor takes it up, and goes on as if it "
            f"had worked"
        ), evidence={"call_step": call.index, "observation_step": result.index,
                     "observation": quote(result.text or "", 120)})]
    return []
