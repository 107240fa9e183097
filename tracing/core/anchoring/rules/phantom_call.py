"""phantom_call: an action reported as done, or a result read out, with no call
made that could have done it or returned it.

Agents lose track of the line between what they planned and what happened:
"I've cancelled your order" when no cancel was called, "The observation says
…" when nothing came back since the agent last spoke, "Now I take the knife"
with no take made, "Tests pass" before anything ran, a click on a button no
page offered, a lookup planned and never made whose facts are then stated as
read. The text narrates a call the trace does not hold.

Also here, as a finding (never the break): ``untested_claim``, "the code
works on the examples" before anything was run.

Evidence: ``strength.EVIDENCE["phantom_call"]`` ("call never made", strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracing.core.anchoring.code_claims import plan_sentence, reports_outcome
from tracing.core.anchoring.common import (
    WONDER_RE,
    Break,
    args_text,
    claim_sentences,
    column_names,
    is_final,
    quote,
    shown,
    unsupported_units,
    what,
)
from tracing.core.anchoring.phrases import (
    ATTRIBUTION_RE,
    CALLED_WITH_RE,
    CODE_SUCCESS_RE,
    FAKE_OBSERVATION_RE,
    NEGATED_RE,
    NOW_ACTION_RE,
    PAST_CALL_RE,
    PLAN_RE,
    verb_stem,
)
from tracing.core.anchoring.salience import extract
from tracing.core.steps import Step, is_reply
from tracing.core.tokenizer import split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "phantom_call"
UNTESTED = "untested_claim"

# "Now I <verb> X" that says X is at hand, not that something was done to it.
FIND_VERBS = frozenset(["find", "found", "see", "locate", "have", "get", "got", "check", "look"])
# Verbs of switching a setting: "enabled" is what "I've turned it on" did.
_SWITCH_STEMS = {"enabl": "toggl", "disabl": "toggl", "turn": "toggl", "switch": "toggl", "activat": "toggl"}
# A passive past with its means or time: a record's history ("was paid with
# your Mastercard", "were shipped on May 3"), not an action just reported.
_RECORD_HISTORY_RE = re.compile(r"^(?:was|were)\b[^.;]{0,40}?\b(?:with|by|using|via|on|in)\b", re.IGNORECASE)
# A completion the agent claims as its own act ("I've enabled", "we have reset").
_FIRST_PERSON_DONE_RE = re.compile(r"(?:i|we)\b", re.IGNORECASE)
# A plan to read a table's layout ("I should check what columns are available").
_SCHEMA_PLAN_RE = re.compile(r"\b(?:columns?|fields?|schema|structure)\b", re.IGNORECASE)


def _brk(step: Step, reason: str, evidence: dict) -> list[Break]:
    return [Break(step=step.index, pattern=NAME, reason=reason, evidence=evidence)]


def read_out(state: RunState, step: Step, text: str) -> list[Break]:
    """The agent reads out a result no call returned ("The observation says
    …" with nothing observed since it last spoke), writes the observation
    itself, says tests pass when nothing was ever run, or says it now does
    what only a tool it did not call could do ("Now I take the knife")."""
    fake = FAKE_OBSERVATION_RE.search(text)
    if fake is not None:
        return _brk(step, (
            f"the {what(step)} at step {step.index} writes its own observation "
            f"({quote(text[fake.start():], 80)}): it acts as if a tool had answered"
        ), {"claim": text[fake.start():fake.start() + 200]})
    out: list[Break] = []
    for sentence in split_sentences(text):
        if state.ran is None and CODE_SUCCESS_RE.search(sentence) and not NEGATED_RE.search(sentence) \
                and not PLAN_RE.match(sentence) and not out:
            # Some models say this of code they are about to submit, as a
            # habit: worth seeing, not the break (it fires on whole models).
            out.append(Break(step=step.index, pattern=UNTESTED, reason=(
                f"the {what(step)} at step {step.index} says {quote(sentence, 80)}, but nothing was run yet"
            ), evidence={"claim": sentence[:200]}))
        if NEGATED_RE.search(sentence):
            continue
        found = _made_up_call(state, step, sentence) or _attributed(state, step, sentence) \
            or _now_done(state, step, sentence)
        if found:
            return out + found
    return out


def _attributed(state: RunState, step: Step, sentence: str) -> list[Break]:
    attribution = ATTRIBUTION_RE.search(sentence)
    if not attribution or state.results_since_statement != 0 or state.told_since_statement:
        return []
    return _brk(step, (
        f"the {what(step)} at step {step.index} reads out {quote(attribution.group(0), 40)}, but no "
        f"call returned anything since the agent last spoke: {quote(sentence, 100)}"
    ), {"claim": sentence[:200]})


def _now_done(state: RunState, step: Step, sentence: str) -> list[Break]:
    now = NOW_ACTION_RE.search(sentence)
    if now is None:
        return []
    verb = now.group("verb").lower()
    tools = {t for t in state.catalogue if t == verb or t.split(" ")[0] == verb}
    if not tools and state.planned_action is not None and state.planned_action[1] == verb and verb not in FIND_VERBS:
        # A verb the agent itself said it would act on next: a tool it knows,
        # though this run never called it.
        tools = {verb}
    # The call may come just before the thought that names it, or before the
    # one before (models write "found it" then "now I take"), or right after
    # it (the thought announcing its own action).
    if not tools or tools & set(state.recent_calls) or tools & state.next_calls.get(step.index, set()) \
            or state.done_before(verb, sentence[now.end():]):
        return []
    return _brk(step, (
        f"the {what(step)} at step {step.index} says {quote(now.group(0), 40)}, but no {verb} "
        f"call was made since the agent last spoke: {quote(sentence, 100)}"
    ), {"claim": sentence[:200], "verb": verb, "tools": sorted(tools)})


def _made_up_call(state: RunState, step: Step, sentence: str) -> list[Break]:
    """"I already searched [X]" with no search of X made; "I have already run
    it on the examples" with nothing run at all."""
    past = PAST_CALL_RE.search(sentence)
    if past is None or PLAN_RE.match(sentence.strip()):
        return []
    arg = CALLED_WITH_RE.match(past.group("rest"))
    if arg is not None:
        said = " ".join(next(g for g in arg.groups() if g).lower().split())
        if said in " ".join(state.acted_text.split()):
            return []
        why = f"no earlier call was made with {quote(said, 60)}"
    elif state.ran is None:
        why = "no call was made before it"
    else:
        return []
    return _brk(step, f"the {what(step)} at step {step.index} says {quote(past.group(0), 60)}, but {why}",
                {"claim": sentence[:200], "verb": past.group("verb").lower()})


def unrun_outcome(state: RunState, step: Step, text: str) -> list[Break]:
    """The previous statement said what comes next; this one reports how the
    run went, and no call was made nor result came back between."""
    if state.ran is None or state.results_since_statement or state.calls_since_statement \
            or state.told_since_statement or not state.turn_thoughts:
        return []
    before, said = state.turn_thoughts[-1]
    plan = plan_sentence(said)
    claim = next((x for x in split_sentences(text) if reports_outcome(x)), None) if plan else None
    if claim is None:
        return []
    return _brk(step, (
        f"at step {before} the agent says what it does next ({quote(plan or '', 80)}), but no call was made and "
        f"no result came back since; the {what(step)} at step {step.index} reports how it went: {quote(claim, 100)}"
    ), {"plan_step": before, "plan": (plan or "")[:200], "claim": claim[:200]})


def unmade_lookup(state: RunState, step: Step, sentence: str, missing: list[str]) -> list[Break]:
    """Values stated as read right after planning the lookup that would give them, never made."""
    if state.unmade_lookup is None or is_reply(step):
        return []
    planned_at, plan = state.unmade_lookup
    return _brk(step, (
        f"the thought at step {planned_at} planned a lookup ({quote(plan, 80)}) that was never made; "
        f"the {what(step)} at step {step.index} states {shown(missing, sentence)} as if it had been read"
    ), {"claim": sentence[:200], "missing": missing[:5], "plan_step": planned_at})


def before_looking(state: RunState, step: Step, text: str) -> list[Break]:
    """Before the first observation a thought can only plan from the task;
    but one that states facts right after planning the lookup that would
    give them acts as if the lookup had been made."""
    if state.unmade_lookup is None:
        return []
    for sentence in claim_sentences(text):
        missing = unsupported_units(extract(sentence), state.evidence, sentence)
        found = unmade_lookup(state, step, sentence, missing) if missing else []
        if found:
            return found
    return []


def columns_unread(state: RunState, step: Step, text: str) -> list[Break]:
    """"I should check what columns are available." then, with no call in
    between, "The `teacher` table has a `Hometown` column": it names
    columns it planned to read and did not (the question may well use the
    word; the schema was never shown)."""
    if state.unmade_lookup is None or not _SCHEMA_PLAN_RE.search(state.unmade_lookup[1]):
        return []
    for sentence in split_sentences(text):
        if sentence.rstrip().endswith("?") or WONDER_RE.search(sentence):
            continue
        unread = [c for c in column_names(sentence) if not any(c.lower() in seen.lower() for _, seen in state.observed)]
        if unread:
            return unmade_lookup(state, step, sentence, unread)
    return []


def reported_done(state: RunState, step: Step, sentence: str) -> list[Break]:
    """An action reported as done that no call did."""
    m = state.completion(sentence)
    if m is None or NEGATED_RE.search(sentence) or not state.any_user_turn and not state.catalogue:
        return []
    stem = verb_stem(m.group("verb"))
    if len(stem) < 3:
        return []
    candidates = {t for t in state.catalogue if stem in t}
    if any(stem in t for t in state.done_tools) or said_done(stem, m.group("verb").lower(), state.done_texts):
        return []
    if any(stem in t for t in state.called_tools - state.done_tools):
        return []  # it was called and failed: "the code I executed" after its traceback is no phantom
    if state.writes_since_user and any(stem in text for text in state.done_texts):
        return []  # a write was made since the user spoke; its result may name it otherwise
    if _RECORD_HISTORY_RE.search(sentence[m.start():]):
        return []  # "was paid with your Mastercard": the record's history, not an action just done
    user_did = {_SWITCH_STEMS.get(x, x) for x in state.user_done}
    if _SWITCH_STEMS.get(stem, stem) in user_did and not _FIRST_PERSON_DONE_RE.match(m.group(0)):
        # The user reports having done it ("I went ahead and reset the APN
        # settings"); "I've enabled roaming" is the agent's own claim, which
        # only its own call backs.
        return []
    if candidates:
        why = f"no call of {', '.join(sorted(candidates)[:3])} was made before it"
    elif state.any_user_turn and state.writes_since_user == 0:
        why = ("no tool was called since the user's last turn" if state.calls_since_user == 0
               else "only lookups were made since the user's last turn")
    else:
        return []
    return _brk(step, (
        f"the {what(step)} at step {step.index} reports {quote(m.group(0), 60)} as done, but {why}: "
        f"{quote(sentence, 100)}"
    ), {"claim": sentence[:200], "verb": m.group("verb"), "tools": sorted(candidates)[:5]})


def said_done(stem: str, verb: str, texts) -> bool:
    """A result says the verb was done ("Roaming enabled", "refunded"): the
    stem as a word of its own, not inside a field name ("roaming_enabled":
    false) or another word ("address" for "add")."""
    pattern = re.compile(
        rf"(?<!\w)(?:{re.escape(stem)}(?:e|ed|d|es|s|ing|red|ted|led|ion|ions)?|{re.escape(verb)})(?!\w)"
    )
    return any(pattern.search(text) for text in texts)


def click(state: RunState, step: Step, text: str) -> list[Break]:
    """A run-ending click on a button no page showed ("click[Buy Now]" with
    only the search results seen): it acts on a page it never opened. An
    earlier click on a missing label is answered "Invalid action!", which
    the run sees and may recover from (judged as any failed call)."""
    if not is_final(step) or (step.tool or "").strip().lower() != "click" or not state.ui_labels:
        return []
    label = (args_text(step.args) or "").strip().lower()
    parts = [p.strip() for p in label.split(",")]
    if not label or label in state.ui_labels or all(p in state.ui_labels for p in parts if p):
        return []
    if state.broke_at(step.index):
        return []
    return _brk(step, (
        f"the {what(step)} at step {step.index} clicks {quote(label, 60)}, which no page shown so far offers: "
        "it acts on a page it never opened"
    ), {"claim": label[:200]})

