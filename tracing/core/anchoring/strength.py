"""How sure a break is: the kind of its evidence, and whether it is shown.

*Strong*: the run itself holds the proof (a value contradicted by what was
observed, a failure read as success, a question asked again, a call claimed
and never made): the run's anchor break, outlined and counted everywhere.
*Weak*: all it has is an absence (nothing observed supports it). Agents
compute, convert, know facts and paraphrase, so an absence is a finding worth
a look, never the outlined step. A project's reviewers may demote a pattern
to weak for their agents (``demoted``); the detector is not retuned for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

STRONG = "strong"
WEAK = "weak"


@dataclass(frozen=True)
class Evidence:
    kind: str  # what the proof is, in one word a reviewer can read
    strength: str  # STRONG or WEAK
    # A prior on how often a break of this pattern is a real lapse, from the
    # corruption benchmark and the succeeded runs of every source
    # (bench/README-anchoring.md "Stop 32"); shown beside the break, never
    # used to decide.
    confidence: float


# One row per pattern of ``tracing.core.anchoring.report.PATTERNS``.
EVIDENCE: dict[str, Evidence] = {
    "rejected_resubmission": Evidence("repeated after rejection", STRONG, 0.95),
    "phantom_call": Evidence("call never made", STRONG, 0.85),
    "stale_value": Evidence("contradicted by a later result", STRONG, 0.85),
    "wrong_record": Evidence("contradicted by the record", STRONG, 0.85),
    "unconfirmed_success": Evidence("failure read as success", STRONG, 0.9),
    "against_conclusion": Evidence("contradicts its own conclusion", STRONG, 0.85),
    "wrong_relation": Evidence("taken from another relation", STRONG, 0.8),
    "requery": Evidence("answered before", STRONG, 0.85),
    # A value the text says it read in a result, which the result lacks: the
    # agent names its source, so the absence is a contradiction.
    "misread_result": Evidence("not in the result it cites", STRONG, 0.8),
    # The same call with no arguments, after a result that was not a failure
    # (the state of the world read again, which agents do to check), or a
    # write that worked done again (another one made, not a question asked).
    "state_reread": Evidence("state read or written again", WEAK, 0.3),
    "unsupported_claim": Evidence("nothing observed supports it", WEAK, 0.4),
    "unobserved_argument": Evidence("argument nothing observed holds", WEAK, 0.4),
    "ignored_observation": Evidence("result not used", WEAK, 0.3),
}


# The patterns that are weak whatever their evidence (a row such as
# "state_reread" is a weak variant of a strong pattern, not a pattern).
WEAK_PATTERNS = frozenset(["unsupported_claim", "unobserved_argument", "ignored_observation"])


def evidence_of(pattern: str, cited: bool = False, probe: bool = False) -> Evidence:
    """The evidence row of a break; ``cited``: the text says it read the value in
    a result; ``probe``: a re-query of a call that passes no arguments."""
    if cited and pattern == "unsupported_claim":
        return EVIDENCE["misread_result"]
    if probe and pattern == "requery":
        return EVIDENCE["state_reread"]
    return EVIDENCE.get(pattern, Evidence("other", WEAK, 0.3))


def is_shown(pattern: str, strength: str, demoted: Iterable[str] = ()) -> bool:
    """Whether a break of ``pattern`` is the run's shown break."""
    return strength == STRONG and pattern not in set(demoted)
