"""How uncertain an interruption is, before and after reviewers and forks. Pure.

The prior of an interruption comes from the threshold that decided it, as the
watchdog recorded it in the evidence (tracing.core.watchdog: name, effective value
after complexity scaling, the score that met it, the comparison): the review
queue reads the rule, never rebuilds it.
"""

from __future__ import annotations

from typing import Any

from runs.reviews.models import ForkOutcome, LabelState

# Prior uncertainty of kinds of interruption that carry no score to compare
# with a threshold. A budget truncation is blunt (the run may have been one
# step from the answer), so it sits above the middle; a person's stop was a
# deliberate decision, so it sits below. An interruption stored before the
# watchdog recorded its threshold is not rebuilt: it is a coin toss.
BUDGET_PRIOR = 0.6
USER_PRIOR = 0.2
UNKNOWN_PRIOR = 0.5
# Once reviewers agree, an item should sink in "most uncertain first", but
# keep its order among the settled ones.
SETTLED_FACTOR = 0.1
# An unsure label or a disagreement is exactly what a second look is for.
UNSURE_UNCERTAINTY = 0.9
DISPUTED_UNCERTAINTY = 1.0
# A fork that succeeded contradicts the detector (likely a false kill, worth a
# look); one that failed or looped again confirms it.
FORK_SUCCEEDED_FLOOR = 0.8
FORK_CONFIRMED_FACTOR = 0.5


def _budget(evidence: dict) -> tuple[str, dict, float]:
    limit = evidence.get("limit") or "max_steps"
    value = evidence.get({"token_budget": "max_tokens", "cost_budget": "max_cost"}.get(limit, limit))
    used = evidence.get({"max_steps": "turns", "cost_budget": "cost"}.get(limit, "tokens"))
    return f"{limit}={value}", {"limit": limit, "value": value, "used": used}, BUDGET_PRIOR


def _closeness(value: float, score: float, op: str) -> float:
    """1 when the score sat exactly on its threshold, falling to 0 as it moves a
    whole threshold-width past it: the closer the call, the more a look is worth."""
    direction = -1 if op.startswith("<") else 1
    # Width of "how far past the threshold counts as clear-cut": the distance
    # to the end of the scale for fractions, the threshold itself for counts.
    width = (1.0 - value if direction > 0 else value) if 0 < value < 1 else max(float(value), 1.0)
    margin = (score - value) * direction / (width or 1.0)
    return round(1.0 - min(1.0, max(0.0, margin)), 4)


def threshold_snapshot(detector: str, evidence: dict[str, Any]) -> tuple[str, dict, float]:
    """(group key, snapshot, prior uncertainty) of one interruption's evidence."""
    if detector == "budget":
        return _budget(evidence)
    if detector == "user":
        return "", {}, USER_PRIOR
    scores = evidence.get("scores") or {}
    threshold = evidence.get("threshold")
    if not isinstance(threshold, dict) or not threshold.get("name"):
        return "", {"scores": scores}, UNKNOWN_PRIOR
    name, value, score = threshold["name"], threshold.get("value"), threshold.get("score")
    op = str(threshold.get("op") or ">=")
    snapshot = {**threshold, "scores": scores}
    key = f"{name}{op}{value}"
    if not isinstance(value, int | float) or not isinstance(score, int | float):
        return key, snapshot, UNKNOWN_PRIOR
    return key, snapshot, _closeness(value, score, op)


def uncertainty_of(prior: float, label: str, fork_outcome: str) -> float:
    """Sort key of "most uncertain first"."""
    if label == LabelState.DISPUTED:
        return DISPUTED_UNCERTAINTY
    if label == LabelState.UNSURE:
        return UNSURE_UNCERTAINTY
    if label in (LabelState.JUSTIFIED, LabelState.WRONGLY_KILLED):
        return round(prior * SETTLED_FACTOR, 4)
    if fork_outcome == ForkOutcome.SUCCEEDED:
        return max(prior, FORK_SUCCEEDED_FLOOR)
    if fork_outcome in (ForkOutcome.FAILED, ForkOutcome.LOOPED):
        return round(prior * FORK_CONFIRMED_FACTOR, 4)
    return prior
