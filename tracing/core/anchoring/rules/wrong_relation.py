"""The answer taken from the wrong sentence: a relation slip.

The unsupported-claim check cannot see this one, because the wrong value *is*
in the observation: the page says "he grew up in Mirefield … he was born in
Calder Bay", the question asks where he was born, the answer is Mirefield.
The check (final answers only):

1. relation cues = the question's content words, without its named entities
   (capitalised spans, 《titles》) and without the answer-type noun after the
   question word ("which *town*", "how many *seats*", "哪个*城市*");
2. in the latest observation that contains the answer, another sentence
   carries a cue the answer's sentence lacks (and, when the answer's carries
   one the other lacks, the other's comes later in the question: the
   relation, not the subject);
3. and that other sentence holds a different value *in the same slot*: after
   the same preposition / function word ("in Mirefield" vs "in Calder Bay",
   "profit of 48.2" vs "profit of 41.7", "于青石镇" vs "于白沙市").

Condition 3 is what keeps it quiet on multi-hop pages, where another sentence
naturally carries the question's *bridge* relation ("portrayed … in the film
Kiss and Tell" next to "served as Chief of Protocol").

Agents lose track of which relation the question asks for: the page holds
both, and the value next to the wrong cue is taken.

Evidence: ``strength.EVIDENCE["wrong_relation"]`` ("taken from another
relation", strong). Judged only when nothing else broke since the turn began.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracing.core.anchoring.common import Break, quote
from tracing.core.normalize import tokens
from tracing.core.steps import Step
from tracing.core.tokenizer import split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "wrong_relation"

# English inflections folded before cues are compared ("reported" = "report",
# "profits" = "profit"); a prefix stem would also merge "former" and "formed".
_SUFFIXES = (("ing", 6), ("ed", 5), ("es", 5), ("s", 4))
# Words that name the kind of answer or are too common to be a relation cue.
GENERIC_CUES = frozenset(
    ["name", "names", "called", "year", "years", "number", "many", "much", "time", "date", "place", "city", "town", "country", "people", "person", "one", "two", "first", "last", "also", "which", "what", "part", "known"]
)
_WH_NOUN_RE = re.compile(r"\b(?:which|what|how many|how much)\s+([a-z]+)", re.I)
_ZH_WH_RE = re.compile(r"(?:哪个|哪座|哪一|哪|什么|多少)([\u4e00-\u9fff]{1,2})")
_CAPITALISED_RE = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of|the|and|de|von|van)?\s*[A-Z][\w'-]*)*")
_TITLE_RE = re.compile(r"《[^》]*》")
_NUMBER_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A slot is marked by the word (or CJK character) just before the value;
# words of one class mark the same slot ("in"/"at", 于/在: a place). "of" is
# left out: "the founder of X" and "a college of Y" are not one slot.
SLOT_CLASSES = {
    "in": "place", "at": "place", "on": "place", "near": "place", "于": "place", "在": "place",
    "from": "from", "to": "to", "as": "as", "by": "by", "为": "be", "是": "be",
}
_CLAUSE_RE = re.compile(r"[，,；;]")


def _stem(word: str) -> str:
    if not word.isascii():
        return word
    for suffix, min_len in _SUFFIXES:
        if len(word) >= min_len and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def relation_cues(question: str) -> set[str]:
    return set(cue_positions(question))


def cue_positions(question: str) -> dict[str, int]:
    """Each cue with its position in the question (first occurrence)."""
    text = _TITLE_RE.sub(" ", question)
    entity_words = {w.lower() for span in _CAPITALISED_RE.findall(text) for w in span.split()}
    answer_nouns = {m.group(1).lower() for m in _WH_NOUN_RE.finditer(text)}
    zh_nouns = {m.group(1) for m in _ZH_WH_RE.finditer(text)}
    cues: dict[str, int] = {}
    for pos, tok in enumerate(tokens(text)):
        if tok in entity_words or tok in answer_nouns or tok in GENERIC_CUES or tok.isdigit():
            continue
        if any(tok in noun or noun in tok for noun in zh_nouns):
            continue
        if len(tok) < (3 if tok.isascii() else 2):
            continue
        cues.setdefault(_stem(tok), pos)
    return cues


def _sentence_cues(sentence: str, cues: set[str]) -> set[str]:
    return {_stem(t) for t in tokens(sentence)} & cues


def _slot_before(sentence: str, start: int) -> str | None:
    """The slot class of the value starting at `start`, if a slot word marks it."""
    before = sentence[:start].rstrip()
    if not before:
        return None
    if "\u4e00" <= before[-1] <= "\u9fff":
        return SLOT_CLASSES.get(before[-1])
    word = re.findall(r"[A-Za-z]+$", before)
    return SLOT_CLASSES.get(word[0].lower()) if word else None


def _values_in_slot(sentence: str, slot: str, numeric: bool) -> list[str]:
    markers = [m for m, cls in SLOT_CLASSES.items() if cls == slot]
    values = []
    for marker in markers:
        if not marker.isascii():
            values += [m.group(1) for m in re.finditer(re.escape(marker) + r"([\u4e00-\u9fff]{2,6})", sentence)]
            continue
        pattern = r"\b" + re.escape(marker) + r"\s+(?:the\s+)?"
        pattern += r"(\d[\d,]*(?:\.\d+)?)" if numeric else r"([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)"
        values += [m.group(1) for m in re.finditer(pattern, sentence)]
    return values


def _units(text: str) -> list[str]:
    """Sentences, and CJK sentences further into clauses: Chinese packs several
    facts into one sentence between commas (他在青石镇长大，……他出生于白沙市)."""
    out = []
    for sentence in split_sentences(text):
        if any("\u4e00" <= ch <= "\u9fff" for ch in sentence):
            out += [c.strip() for c in _CLAUSE_RE.split(sentence) if c.strip()]
        else:
            out.append(sentence)
    return out


def wrong_relation(question: str, answer: str, observations: Sequence[tuple[int, str]]) -> dict[str, Any] | None:
    """Evidence of a relation slip for this final answer, or None."""
    answer = answer.strip().strip(".").strip()
    if not answer or len(answer) > 80:
        return None
    positions = cue_positions(question)
    cues = set(positions)
    if not cues:
        return None
    numeric = bool(_NUMBER_RE.fullmatch(answer.replace(" ", "")))
    needle = answer.lower()
    for index, text in reversed(observations):
        if needle not in text.lower():
            continue
        sentences = _units(text)
        with_answer = [s for s in sentences if needle in s.lower()]
        if not with_answer:
            return None
        answer_cues = set().union(*(_sentence_cues(s, cues) for s in with_answer))
        slots = {_slot_before(s, s.lower().index(needle)) for s in with_answer} - {None}
        if numeric:
            # "in 1963" / "in 1978" are dates along a life, not rival places.
            slots.discard("place")
        for other in sentences:
            if other in with_answer:
                continue
            other_cues = _sentence_cues(other, cues)
            # The other sentence carries a cue the answer's lacks. When each has
            # one the other lacks ("the author grew up in…" / "he was born
            # in…"), the cue asked last wins: questions name the subject before
            # the relation ("the author … born", "作者出生"). The same-slot rival
            # below is what makes it a slip.
            only_other, only_answer = other_cues - answer_cues, answer_cues - other_cues
            if not only_other:
                continue
            if only_answer and max(positions[c] for c in only_answer) >= max(positions[c] for c in only_other):
                continue
            for slot in slots:
                rivals = [v for v in _values_in_slot(other, slot, numeric) if v.lower() != needle]
                if rivals:
                    return {"observation": index, "answer_sentence": with_answer[0][:300],
                            "other_sentence": other[:300], "rival": rivals[0],
                            "cues": sorted(other_cues - answer_cues), "slot": slot}
        return None  # only the latest observation holding the answer is judged
    return None


def on_final(state: RunState, step: Step, text: str) -> list[Break]:
    """The final answer's value, taken from the sentence of another relation."""
    first = state.turn_first if state.turn_first is not None else step.index
    if any(b.step >= first for b in state.breaks):
        return []
    answer = step.args if isinstance(step.args, str) and step.args.strip() else text
    if isinstance(step.args, dict) and len(step.args) == 1:
        answer = str(next(iter(step.args.values())))
    slip = wrong_relation(state.task, answer, state.observed)
    if slip is None:
        return []
    # The slip happened where the reasoning first took the value up.
    needle = answer.strip().lower()
    at = next((i for i, thought in state.turn_thoughts if needle and needle in thought.lower()), step.index)
    who = f"the thought at step {at}" if at != step.index else f"the final answer at step {step.index}"
    reason = (
        f"the observation at step {slip['observation']} ties {', '.join(slip['cues'])} to {slip['rival']} "
        f"({quote(slip['other_sentence'], 90)}); {who} takes {quote(answer.strip(), 40)} from "
        f"{quote(slip['answer_sentence'], 90)}, which says nothing about it"
    )
    return [Break(step=at, pattern=NAME, reason=reason, evidence={**slip, "final_step": step.index})]
