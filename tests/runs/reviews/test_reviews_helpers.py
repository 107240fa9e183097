"""Shared set-up for the review tests: runs with interruption steps."""

from __future__ import annotations

from runs.reviews.services import review_items_sync
from tracing.core.steps import Step as StepRecord
from tracing.core.watchdog import DEFAULT_POLICY
from tracing.store.recorder import record_step

# Evidence as tracing.core.watchdog writes it, the threshold that decided included.
REPETITION_EVIDENCE = {
    "detector": "repetition", "scores": {"similarity": 0.9, "repeats": 2, "novelty": 0.0, "obs_class": "empty"},
    "steps": [1, 4], "policy": "default", "policy_version": 1, "also": [],
    "threshold": {"name": "thresholds.repetition_similarity", "value": DEFAULT_POLICY.thresholds.repetition_similarity,
                  "score": 0.9, "op": ">="},
}
STAGNATION_EVIDENCE = {
    "detector": "stagnation", "scores": {"streak": 6, "k": 6}, "steps": [2, 9], "policy": "default",
    "policy_version": 1, "also": [], "threshold": {"name": "ladder.stop_streak", "value": 6, "score": 6, "op": ">="},
}


def add_step(run, index: int, kind: str, text: str = "", **meta) -> None:
    record_step(run.pk, StepRecord(index=index, kind=kind, text=text or f"{kind} {index}", meta=meta,
                                   tool="search" if kind in ("action", "observation") else None,
                                   args={"query": f"q{index}"} if kind == "action" else None))


def interrupted_run(make_run, **fields):
    """Steps 0-5 (thought/action/observation), a repetition hint at 6, steps
    7-8, a stagnation stop at 9."""
    run = make_run(steps=6, status=fields.pop("status", "stopped"), **fields)
    add_step(run, 6, "intervention", "You searched this already; change approach.",
             detector="repetition", tier="hint", evidence=REPETITION_EVIDENCE)
    add_step(run, 7, "action")
    add_step(run, 8, "observation")
    add_step(run, 9, "intervention", "Stopped: no progress.", detector="stagnation", tier="stop",
             evidence=STAGNATION_EVIDENCE)
    review_items_sync(run.pk)
    run.refresh_from_db()
    return run


def grant_reviewer(user):
    """The user, at least a reviewer of the "team" project (an admin stays admin)."""
    from agentlab.projects.models import Membership, Role
    from tests.projects import team

    membership, _ = Membership.objects.get_or_create(user=user, project=team(), defaults={"role": Role.REVIEWER})
    if not membership.is_reviewer:
        membership.role = Role.REVIEWER
        membership.save(update_fields=["role"])
    return user
