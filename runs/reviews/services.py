"""The review queue's writes: one item per interruption, labels, forks.

DESIGN.md 1: "False kills are the real cost… pull out every interrupted run and
ask whether two more steps would have succeeded." Every interruption becomes a
ReviewItem (synced when its run ends: runs.lifecycle); reviewers label it; a
fork continues the run from it with the watchdog off and its outcome is
recorded on the item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from runs.core.models import Policy, Run
from runs.launch.services import fork_create, run_enqueue
from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from runs.reviews.priors import threshold_snapshot, uncertainty_of
from tracing.store.models import Step

LABEL_VALUES = tuple(ReviewLabel.Value.values)
# A note is a sentence or two; a pasted trajectory belongs in the run.
NOTE_MAX_CHARS = 4000


class ReviewError(ValueError):
    """Bad input to a review service (shown to the user as a 400)."""


# -- items -------------------------------------------------------------------


def review_items_sync(run_id: int) -> int:
    """Upsert one item per intervention step of the run (idempotent) and, when
    the run is a fork that has ended, record its outcome on the items that
    started it. Called when a run ends and by `manage.py analyse`; the queue
    syncs a run still going on demand (item_for_step).
    Returns the number of intervention steps seen."""
    run = Run.objects.select_related("policy").get(pk=run_id)
    steps = list(Step.objects.filter(run_id=run_id, kind=Step.Kind.INTERVENTION)
                 .order_by("index").values_list("index", "meta", "created_at"))
    items = [_item(run, index, meta or {}, created_at) for index, meta, created_at in steps]
    if items:
        # Labels, uncertainty and fork columns are the reviewers'; a re-sync
        # refreshes only what comes from the run.
        ReviewItem.objects.bulk_create(
            items, update_conflicts=True, unique_fields=["run", "step_index"],
            update_fields=["detector", "tier", "policy_name", "policy_version", "threshold", "thresholds", "task",
                           "model_name", "run_status", "created_at"],
        )
    if run.parent_id is not None and not run.is_live:
        review_fork_settle(run)
    return len(items)


def _item(run: Run, index: int, meta: dict, created_at) -> ReviewItem:
    evidence = meta.get("evidence") or {}
    detector = str(meta.get("detector") or evidence.get("detector") or "watchdog")[:40]
    # The policy that decided, from the evidence; else the run's.
    name = str(evidence.get("policy") or (run.policy.name if run.policy_id else ""))[:80]
    version = evidence.get("policy_version") or (run.policy.version if run.policy_id else None)
    key, snapshot, prior = threshold_snapshot(detector, evidence)
    return ReviewItem(
        run_id=run.pk, step_index=index, detector=detector, tier=str(meta.get("tier") or "")[:10],
        policy_name=name, policy_version=version if isinstance(version, int) else None,
        threshold=key[:120], thresholds=snapshot, task_id=run.task_id, model_name=run.model_name,
        run_status=run.status, created_at=created_at, prior=prior, uncertainty=prior,
    )


def item_for_step(run_id: int, index: int, items: QuerySet[ReviewItem] | None = None) -> ReviewItem | None:
    """The item of an intervention step, synced on demand (a run still going
    has its items written when it ends); None when the step is no interruption."""
    qs = (items if items is not None else ReviewItem.objects.all()).filter(run_id=run_id, step_index=index)
    item = qs.first()
    if item is None and Step.objects.filter(run_id=run_id, index=index, kind=Step.Kind.INTERVENTION).exists():
        review_items_sync(run_id)
        item = qs.first()
    return item


# -- labels ------------------------------------------------------------------


def label_state(values: Sequence[str]) -> str:
    """The item's verdict from its reviewers' current labels. Pure."""
    distinct = set(values)
    if not distinct:
        return LabelState.UNLABELLED
    if len(distinct) > 1:
        return LabelState.DISPUTED
    return distinct.pop()


def review_label(*, item_id: int, reviewer, value: str, note: str = "") -> ReviewLabel:
    """Record `reviewer`'s label on the item; a changed label supersedes the old.

    The item row is locked for the whole write, so two reviewers labelling at
    once are serialised and the item's verdict is computed from both; a double
    submit of the same label finds the first and returns it unchanged. The
    partial unique index (one current label per reviewer and item) holds even
    for writers that bypass this function.
    """
    if value not in LABEL_VALUES:
        raise ReviewError(f"label must be one of {', '.join(LABEL_VALUES)}; got {value[:40]!r}")
    note = (note or "").strip()
    if len(note) > NOTE_MAX_CHARS:
        raise ReviewError(f"the note is longer than {NOTE_MAX_CHARS} characters")
    if "\x00" in note:
        raise ReviewError("the note contains a NUL character, which cannot be stored")
    with transaction.atomic():
        item = ReviewItem.objects.select_for_update().only("pk", "prior", "fork_outcome").get(pk=item_id)
        current = ReviewLabel.objects.filter(item_id=item.pk, reviewer=reviewer, is_current=True).first()
        if current is not None and current.value == value and current.note == note:
            return current
        if current is not None:
            ReviewLabel.objects.filter(pk=current.pk).update(is_current=False)
        label = ReviewLabel.objects.create(item_id=item.pk, reviewer=reviewer, value=value, note=note)
        if current is not None:
            ReviewLabel.objects.filter(pk=current.pk).update(superseded_by=label)
        values = list(ReviewLabel.objects.filter(item_id=item.pk, is_current=True).values_list("value", flat=True))
        state = label_state(values)
        ReviewItem.objects.filter(pk=item.pk).update(
            label=state, label_count=len(values), uncertainty=uncertainty_of(item.prior, state, item.fork_outcome)
        )
    return label


# -- forks -------------------------------------------------------------------


def review_fork_start(*, item: ReviewItem, owner, policy: Policy | None = None, turns: int | None = None) -> Run:
    """Continue the item's run from the interruption (the intervention step is
    left out, so the watchdog's word never reaches the model) for `turns` more
    model turns, with the watchdog off unless a policy is given.

    The item points at the fork before the message is sent, so a fast worker
    that ends the fork always finds the item to settle.
    """
    kwargs = {} if turns is None else {"turns": turns}
    with transaction.atomic():
        fork = fork_create(parent=item.run, fork_from=item.step_index, owner=owner, policy=policy, enqueue=False,
                           **kwargs)
        ReviewItem.objects.filter(pk=item.pk).update(fork=fork, fork_outcome=ForkOutcome.RUNNING, fork_turns=None,
                                                     fork_reason="")

    def undo() -> None:
        ReviewItem.objects.filter(pk=item.pk).update(fork=None, fork_outcome=ForkOutcome.NONE)
        fork.delete()

    run_enqueue(run=fork, undo=undo)
    return fork


@dataclass(frozen=True)
class ForkResult:
    outcome: str
    turns: int
    reason: str


def fork_result(fork: Run, turns: int) -> ForkResult:
    """What became of a fork that has ended. Pure over the run's columns."""
    if fork.status == Run.Status.ERROR:
        return ForkResult(ForkOutcome.ERROR, turns, fork.reason or "unknown error")
    if fork.success is True:
        return ForkResult(ForkOutcome.SUCCEEDED, turns, fork.reason)
    if fork.stopped_by in ("max_steps", "token_budget", "cost_budget", "watchdog"):
        return ForkResult(ForkOutcome.LOOPED, turns, fork.reason)
    if fork.success is None and fork.status == Run.Status.FINISHED and fork.final_answer:
        # No gold answer to score against: an answer is the best we can tell.
        return ForkResult(ForkOutcome.SUCCEEDED, turns, "answered (no gold answer to score)")
    return ForkResult(ForkOutcome.FAILED, turns, fork.reason or "wrong answer")


def review_fork_settle(fork: Run) -> None:
    """Record an ended fork's outcome on the items that started it."""
    if fork.is_live:
        return
    turns = Step.objects.filter(run_id=fork.pk, kind__in=[Step.Kind.ACTION, Step.Kind.FINAL]).count()
    result = fork_result(fork, turns)
    with transaction.atomic():
        for item in ReviewItem.objects.select_for_update().filter(fork_id=fork.pk).only("pk", "prior", "label"):
            ReviewItem.objects.filter(pk=item.pk).update(
                fork_outcome=result.outcome, fork_turns=result.turns, fork_reason=result.reason[:2000],
                uncertainty=uncertainty_of(item.prior, item.label, result.outcome),
            )
