"""stale_value: a record's value from before a later result showed it changed.

Agents carry values forward: the address read at the start is repeated after
the update that changed it, the status "pending" after the cancel went
through. The value was observed once, but a later result about the same
record says otherwise; the text lost track of which observation is current.
The same check finds a value given to the wrong record (``wrong_record``).

Evidence: ``strength.EVIDENCE["stale_value"]`` ("contradicted by a later
result", strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracing.core.anchoring.common import Break, is_question, label_blocks, not_a_claim, quote, what
from tracing.core.anchoring.rules.wrong_record import record_break
from tracing.core.steps import Step
from tracing.core.tokenizer import split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "stale_value"

_CLAUSE_SPLIT_RE = re.compile(r",[\"”’']?\s+(?:and|but|so|while)\s+|\s*[—–]\s*", re.IGNORECASE)
# A change proposed, asked for or about to happen: the value it names is the
# one the record does not hold yet.
PROPOSAL_RE = re.compile(
    r"\b(?:will|would|shall|want(?:s|ed)? to|wish to|like to|going to|to confirm|confirm|proceed|can|could|may|"
    r"should|please|let me|i'll|we'll|request(?:ed)? to|plan to|about to)\b"
    r"|^\W*(?:modify|change|update|cancel|return|exchange|swap|replace|switch|move|set|add|remove)\b"
    # ...or names the earlier state on purpose ("still set to the old address").
    r"|\b(?:old|previous|former|original|originally|prior|before)\b",
    re.IGNORECASE,
)


def record_slip(state: RunState, step: Step, sentence: str, before: str = "") -> list[Break]:
    # "The status is now X, and you will receive an email": a clause that
    # states a record's state is judged even when another one proposes.
    proposal = all(PROPOSAL_RE.search(clause) for clause in _CLAUSE_SPLIT_RE.split(sentence))
    slip = state.records.check(sentence, proposal=proposal, before=before)
    if slip is None:
        return []
    if slip["slip"] != "stale":
        return record_break(step, slip, sentence)
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the {what(step)} at step {step.index} says {slip['field']} of {slip['record']} is "
        f"“{slip['said']}”, but the result at step {slip['step']} shows it is now “{slip['current']}”: "
        f"{quote(sentence, 100)}"
    ), evidence={**slip, "claim": sentence[:200]})]


def on_statement(state: RunState, step: Step, text: str) -> list[Break]:
    # Whole sentences: "its status" in a clause refers to the order the
    # sentence named before it.
    sentences = [x for x in split_sentences(text) if not is_question(x) and not not_a_claim(x)]
    for before, sentence in [*zip(["", *sentences], sentences, strict=False), *(("", b) for b in label_blocks(text))]:
        found = record_slip(state, step, sentence, before)
        if found:
            return found
    return []


def on_final(state: RunState, step: Step, text: str) -> list[Break]:
    return record_slip(state, step, text)
