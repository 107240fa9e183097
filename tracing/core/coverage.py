"""Evidence coverage of a final answer: the share of its core facts that some
observation supports (issue 17, the evaluation page).

Core facts are what the anchoring check already treats as claims: numbers
(not the small counting ones), identifiers, names and Chinese name pieces
(``tracing.core.anchoring.salience``), each backed or not by the observations'
``Evidence`` with the same rules (a rounded or derived number counts, a name
needs its words side by side). Only observations are evidence here, not the
task: an answer that repeats the question's own words has not found anything.
Pure, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tracing.core.anchoring.common import small, unsupported_units
from tracing.core.anchoring.evidence import Evidence
from tracing.core.anchoring.salience import ZH_COMMON, extract

# An answer that says it found nothing states no fact: coverage does not apply
# (the built-in fallbacks, a watchdog's "No answer: ...", the usual phrasings).
ABSTENTION_RE = re.compile(
    r"^\W*(?:no answer\b|i (?:could not|couldn't|cannot|can't|do not|don't) (?:find|know)|"
    r"no such \w+ (?:was|is) found|not found\b|unknown\W*$|未能|无法|找不到|没有找到|不知道)",
    re.IGNORECASE,
)


def core_facts(answer: str) -> list[str]:
    """The facts of an answer that coverage counts (names as their words)."""
    sal = extract(answer)
    id_numbers = {i.rsplit(" ", 1)[-1] for i in sal.ids if " " in i}
    facts = [n for n in sorted(sal.numbers) if n not in id_numbers and not small(n)]
    facts += sorted(sal.ids)
    facts += [" ".join(e) for e in sal.entities]
    # A Chinese piece is a fact when it has a bigram beyond the common words
    # ("未能找到答案" is an abstention, which the anchoring check would let pass
    # as common words; a name like 白沙市 is not).
    facts += [p for p in sal.cjk_pieces if not _common(p)]
    return list(dict.fromkeys(facts))


def _common(piece: str) -> bool:
    return all(piece[i:i + 2] in ZH_COMMON for i in range(len(piece) - 1))


def answer_coverage(answer: str | None, observations: Iterable[str]) -> float | None:
    """Share of the answer's core facts supported by the observations, in [0, 1];
    None when the answer states no fact (no answer, "I could not find it")."""
    if not answer or not answer.strip() or ABSTENTION_RE.match(answer):
        return None
    facts = core_facts(answer)
    if not facts:
        return None
    evidence = Evidence()
    for text in observations:
        if text:
            evidence.add(extract(text), text)
    sal = extract(answer)
    missing = set(unsupported_units(sal, evidence, answer, sal.numbers))
    # Supported means: some bigram observed (a common bigram alone backs nothing here).
    missing |= {f for f in facts if f in sal.cjk_pieces and not any(
        f[i:i + 2] in evidence.words and f[i:i + 2] not in ZH_COMMON for i in range(len(f) - 1))}
    return round(sum(1 for f in facts if f not in missing) / len(facts), 3)
