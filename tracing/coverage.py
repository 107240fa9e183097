"""Evidence coverage of a final answer: the share of its core facts that some
observation supports (issue 17, the evaluation page).

Core facts are what the anchoring check already treats as claims: numbers
(not the small counting ones), identifiers, names and Chinese name pieces
(``tracing.anchoring.salience``), each backed or not by the observations'
``Evidence`` with the same rules (a rounded or derived number counts, a name
needs its words side by side). Only observations are evidence here, not the
task: an answer that repeats the question's own words has not found anything.
Pure, no Django.
"""

from __future__ import annotations

from collections.abc import Iterable

from tracing.anchoring.evidence import Evidence
from tracing.anchoring.report import _small, _unsupported_units
from tracing.anchoring.salience import extract


def core_facts(answer: str) -> list[str]:
    """The facts of an answer that coverage counts (names as their words)."""
    sal = extract(answer)
    id_numbers = {i.rsplit(" ", 1)[-1] for i in sal.ids if " " in i}
    facts = [n for n in sorted(sal.numbers) if n not in id_numbers and not _small(n)]
    facts += sorted(sal.ids)
    facts += [" ".join(e) for e in sal.entities]
    facts += list(sal.cjk_pieces)
    return list(dict.fromkeys(facts))


def answer_coverage(answer: str | None, observations: Iterable[str]) -> float | None:
    """Share of the answer's core facts supported by the observations, in [0, 1];
    None when the answer states no fact (no answer, "I could not find it")."""
    if not answer or not answer.strip():
        return None
    facts = core_facts(answer)
    if not facts:
        return None
    evidence = Evidence()
    for text in observations:
        if text:
            evidence.add(extract(text), text)
    sal = extract(answer)
    missing = set(_unsupported_units(sal, evidence, answer, sal.numbers))
    return round(sum(1 for f in facts if f not in missing) / len(facts), 3)
