"""answered_from_memory (a finding, never the break): a final answer of names
that no observation contains but that the agent's own reasoning in the final
turn states.

Right or wrong, it came from the model's knowledge, not from the trace (a
correct one is common in strong models). Only names count (a number has to
have been read or computed), and only when no observation sentence speaks to
the claim: a page naming its subject and relation holds a competing answer,
and then the claim is judged as unsupported.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracing.core.anchoring.common import Break, quote, shown
from tracing.core.anchoring.phrases import ATTRIBUTION_RE
from tracing.core.anchoring.salience import FILLER_WORDS, extract
from tracing.core.normalize import EN_STOP_WORDS, tokens
from tracing.core.steps import Step
from tracing.core.tokenizer import is_cjk, split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "answered_from_memory"

# Observations (the latest ones) and sentences of each searched for a competing answer.
RECENT_OBSERVATIONS = 50
SENTENCES_PER_OBSERVATION = 400


def finding(index: int, said: str, answer: str, evidence: dict, final: int | None = None) -> Break:
    """The finding at thought ``index``, which states ``said`` that the final answer gives."""
    at = f" at step {final}" if final is not None else ""
    return Break(step=index, pattern=NAME, reason=(
        f"the thought at step {index} states {said}, which no observation (nor the task) contains, and the final "
        f"answer{at} ({quote(answer, 60)}) gives it: it comes from the model's own knowledge, not from the trace"
    ), evidence=evidence)


def recalled(state: RunState, step: Step, sentence: str, missing: list[str]) -> list[Break]:
    """A thought of the final turn stating the answer from the model's own
    knowledge (names only, no page speaking to it): a finding, not a break."""
    answer = state.answers.get(step.index)
    if answer is None or any(any(c.isdigit() for c in u) for u in missing):
        return []
    wanted = {w for u in missing for w in tokens(u)}
    answer_words = set(tokens(answer))
    # The thought states the answer (and maybe the bridge it recalled).
    if not any(set(tokens(u)) <= answer_words for u in missing) or ATTRIBUTION_RE.search(sentence) \
            or spoken_to(state, sentence, wanted):
        return []
    return [finding(step.index, shown(missing, sentence), answer, {"claim": sentence[:200], "missing": missing[:5]})]


def _sentences(state: RunState):
    for _, text in state.observed[-RECENT_OBSERVATIONS:]:
        yield from split_sentences(text[:20_000])[:SENTENCES_PER_OBSERVATION]


def spoken_to(state: RunState, claim: str, missing_words: set[str]) -> bool:
    """Some observation sentence speaks to this claim: it names the claim's
    subject and its relation ("Wang Guowei … born … in Hangzhou" against
    "born in Haiyan") and so holds a competing answer."""
    sal = extract(claim)
    if is_cjk(claim):
        # No capitals: the claim's bigrams outside the unobserved name.
        context = {b for b in sal.cjk if not any(b in m for m in missing_words)}
        return any(len(context & set(tokens(s))) >= 2 for s in _sentences(state))
    subject = {w for e in sal.entities for w in e if w not in missing_words}
    subject |= {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", claim)} - missing_words - FILLER_WORDS
    # The question's own subject stands in for "he", "the author", "it".
    subject |= state.task_names
    subject -= EN_STOP_WORDS
    relation = {t for t in sal.terms if t not in missing_words and t not in subject}
    if not subject or not relation:
        return False
    for sentence in _sentences(state):
        words = set(tokens(sentence))
        if subject & words and relation & words:
            return True
    return False
