"""A final answer that is not the one the agent's last thought concluded.

"… so the claim is true." then ``Finish[REFUTES]``; "… so Arthur's Magazine
was started first." then ``Finish[First for Women]``. Every word of such an
answer was observed, so no grounding rule sees it: what broke is the link
between the reasoning and the act. Only an explicit conclusion counts (a
verdict on the claim, or a clause opened by "so" / "thus" / "therefore" /
"the answer is"), and only an answer the thought itself named elsewhere.

Agents lose track of their own reasoning between the thought and the act: the
conclusion is written, then the answer of an alternative it set aside is
submitted.

Evidence: ``strength.EVIDENCE["against_conclusion"]`` ("contradicts its own
conclusion", strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracing.core.anchoring.common import Break, quote
from tracing.core.anchoring.salience import extract
from tracing.core.steps import Step

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "against_conclusion"

# Verdict labels (FEVER-style) and the words a thought gives them in.
_VERDICTS = {
    "supports": re.compile(r"\b(?:claim|statement|it)\s+(?:is|was)\s+(?:true|supported|correct)\b", re.I),
    "refutes": re.compile(
        r"\b(?:claim|statement|it)\s+(?:is|was)\s+(?:false|refuted|incorrect|wrong|not true)\b", re.I
    ),
    "not enough info": re.compile(
        r"\bnot enough (?:info|information|evidence)\b|\b(?:cannot|can't|could not|unable to)\s+"
        r"(?:be\s+)?(?:verif|determin|confirm)", re.I
    ),
}
_LABEL_RE = re.compile(r"^\W*(supports?|refutes?|not enough info(?:rmation)?)\W*$", re.I)

# The clause that draws the conclusion, to the end of its sentence.
_CONCLUDES_RE = re.compile(
    r"(?:\b(?:so|thus|therefore|hence)\b,?|\bthe (?:final )?answer (?:is|must be|should be)\b)\s+([^.!?\n]+)", re.I
)


_PRONOUN_RE = re.compile(r"\s*(?:she|he|it|they|this|that|these|those|him|her|them)\b", re.I)


def _label(answer: str) -> str | None:
    m = _LABEL_RE.match(answer)
    if not m:
        return None
    word = m.group(1).lower()
    return "supports" if word.startswith("support") else "refutes" if word.startswith("refute") else "not enough info"


# A sentence that weighs a verdict rather than states it ("I cannot say if the
# claim is true or not", "I do not think this claim is true").
_HEDGE_RE = re.compile(
    r"\b(?:if|whether|or not|not sure|unsure|unclear|do not know|don't know|not know|cannot (?:say|tell)"
    r"|can't (?:say|tell)|(?:do not|don't) think|maybe|might|may|perhaps|probably)\b",
    re.I,
)
_SENTENCE_RE = re.compile(r"[^.!?\n]+")


def verdict_of(thought: str) -> str | None:
    """The one verdict the thought states outright, or None (none, several, or only weighed)."""
    found = {
        name
        for sentence in _SENTENCE_RE.findall(thought)
        if not _HEDGE_RE.search(sentence)
        for name, rx in _VERDICTS.items()
        if rx.search(sentence)
    }
    return found.pop() if len(found) == 1 else None


def _names(text: str) -> set[str]:
    return {" ".join(e) for e in extract(text).entities}


def against(thought: str, answer: str) -> str | None:
    """What the thought concluded, when ``answer`` gives something else; else None."""
    label = _label(answer)
    if label is not None:
        verdict = verdict_of(thought)
        return verdict.upper() if verdict is not None and verdict != label else None
    conclusions = list(_CONCLUDES_RE.finditer(thought))
    answer_names = _names(answer)
    if not conclusions or not answer_names:
        return None  # a yes / no / number answer is held to nothing here
    last = conclusions[-1]
    if _PRONOUN_RE.match(last.group(1)):
        return None  # "…, so she is the singer": she is whoever came before
    said = _names(last.group(1))
    rest = thought[last.start():].lower()
    if not said or any(a in s or s in a for a in answer_names for s in said) or any(
        _has_words(rest, a) for a in answer_names
    ):
        return None
    # The answer must be a name the thought weighed and set aside, not one it never mentioned.
    earlier = thought[: last.start()].lower()
    if not all(_has_words(earlier, a) for a in answer_names):
        return None
    return last.group(1).strip()


def _has_words(text: str, words: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text) is not None


def on_final(state: RunState, step: Step, answer: str) -> list[Break]:
    """A final answer other than the one the thought just before it concluded."""
    if not state.turn_thoughts:
        return []
    at, thought = state.turn_thoughts[-1]
    concluded = against(thought, answer)
    if concluded is None:
        return []
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the final answer at step {step.index} ({quote(answer, 60)}) is not what the thought at step {at} "
        f"concluded ({quote(concluded, 80)})"
    ), evidence={"claim": answer[:200], "concluded": concluded[:200], "thought_step": at})]
