"""The review queue: items for interruptions, labels, agreement, false-kill figures.

DESIGN.md 1: "False kills are the real cost… pull out every interrupted run and
ask whether two more steps would have succeeded." Every interruption becomes a
ReviewItem; reviewers label it; a fork continues the run from it with the
watchdog off and its outcome is recorded on the item.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from kombu.exceptions import OperationalError

from runs.models import Policy, Run
from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from tracing.models import Step

LABEL_VALUES = tuple(ReviewLabel.Value.values)
# A note is a sentence or two; a pasted trajectory belongs in the run.
NOTE_MAX_CHARS = 4000

# Prior uncertainty of kinds of interruption that carry no score to compare
# with a threshold. A budget truncation is blunt (the run may have been one
# step from the answer), so it sits above the middle; a person's stop was a
# deliberate decision, so it sits below.
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

FINISHED_FORK_OUTCOMES = (ForkOutcome.SUCCEEDED, ForkOutcome.FAILED, ForkOutcome.LOOPED, ForkOutcome.ERROR)


class ReviewError(ValueError):
    """Bad input to a review service (shown to the user as a 400)."""


# -- items -------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    """Which score of the evidence a detector compared with which policy value."""

    score: str
    section: str  # thresholds | windows | evidence
    setting: str
    # +1: fires when score >= threshold; -1: when score <= threshold.
    direction: int


# The threshold that decides each detector (tracing/watchdog.py _triggers).
_RULES = {
    "repetition": _Rule("similarity", "thresholds", "repetition_similarity", +1),
    "observation": _Rule("invalid_run", "windows", "invalid_run", +1),
    # The stagnation window is scaled by task complexity; the evidence records
    # the effective k, which is the honest snapshot.
    "stagnation": _Rule("streak", "evidence", "k", +1),
    "drift": _Rule("stalled", "windows", "drift_patience", +1),
}


def _policy_values(policy) -> dict:
    """tracing.watchdog.Policy -> flat {setting: value} of thresholds and windows."""
    data = policy.to_dict()
    return {**data.get("windows", {}), **data.get("thresholds", {})}


def threshold_snapshot(detector: str, evidence: dict, policy_values: dict) -> tuple[str, dict, float]:
    """(group key, snapshot, prior uncertainty) of one interruption.

    Pure. The prior is 1 when the score sat exactly on its threshold and falls
    to 0 as the score moves a whole threshold-width past it: the closer the
    call, the more a reviewer's look is worth.
    """
    scores = evidence.get("scores") or {}
    if detector == "budget":
        limit = evidence.get("limit") or "max_steps"
        value = evidence.get(limit if limit != "token_budget" else "max_tokens")
        used = evidence.get("turns" if limit == "max_steps" else "tokens")
        return f"{limit}={value}", {"limit": limit, "value": value, "used": used}, BUDGET_PRIOR
    if detector == "user":
        return "", {}, USER_PRIOR
    rule = _RULES.get(detector)
    if rule is None:
        return "", {"scores": scores}, UNKNOWN_PRIOR
    source = scores if rule.section == "evidence" else policy_values
    threshold = source.get(rule.setting)
    score = scores.get(rule.score)
    snapshot = {"setting": rule.setting, "threshold": threshold, "score": score, "scores": scores}
    if detector == "repetition":
        snapshot["repetition_min_repeats"] = policy_values.get("repetition_min_repeats")
    op = ">=" if rule.direction > 0 else "<="
    key = f"{rule.setting}{op}{threshold}" if threshold is not None else ""
    if not isinstance(threshold, int | float) or not isinstance(score, int | float):
        return key, snapshot, UNKNOWN_PRIOR
    # Width of "how far past the threshold counts as clear-cut": the distance
    # to the end of the scale for fractions, the threshold itself for counts.
    width = (1.0 - threshold if rule.direction > 0 else threshold) if 0 < threshold < 1 else max(float(threshold), 1.0)
    margin = (score - threshold) * rule.direction / (width or 1.0)
    return key, snapshot, round(1.0 - min(1.0, max(0.0, margin)), 4)


def uncertainty_of(prior: float, label: str, fork_outcome: str) -> float:
    """Sort key of "most uncertain first". Pure."""
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


def review_items_sync(run_id: int) -> int:
    """Upsert one item per intervention step of the run (idempotent) and, when
    the run is a fork that has ended, record its outcome on the items that
    started it. Called when a run ends, on import and by `manage.py analyse`.
    Returns the number of intervention steps seen."""
    run = Run.objects.select_related("policy").get(pk=run_id)
    steps = list(Step.objects.filter(run_id=run_id, kind=Step.Kind.INTERVENTION)
                 .order_by("index").values_list("index", "meta", "created_at"))
    policies: dict[tuple[str, int | None], dict] = {}
    items = []
    for index, meta, created_at in steps:
        meta = meta or {}
        evidence = meta.get("evidence") or {}
        detector = str(meta.get("detector") or evidence.get("detector") or "watchdog")[:40]
        name = str(evidence.get("policy") or (run.policy.name if run.policy_id else ""))[:80]
        version = evidence.get("policy_version") or (run.policy.version if run.policy_id else None)
        key, snapshot, prior = threshold_snapshot(detector, evidence, _values_for(run, name, version, policies))
        items.append(ReviewItem(
            run_id=run_id, step_index=index, detector=detector, tier=str(meta.get("tier") or "")[:10],
            policy_name=name, policy_version=version if isinstance(version, int) else None,
            threshold=key[:120], thresholds=snapshot, task_id=run.task_id, model_name=run.model_name,
            run_status=run.status, created_at=created_at, prior=prior, uncertainty=prior,
        ))
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


def _values_for(run: Run, name: str, version, cache: dict) -> dict:
    from tracing.watchdog import BUILTIN_POLICIES, DEFAULT_POLICY

    key = (name, version)
    if key not in cache:
        if run.policy_id and run.policy.name == name and run.policy.version == version:
            policy = run.policy.as_policy()
        else:
            row = Policy.objects.filter(name=name, version=version).first() if name and version else None
            policy = row.as_policy() if row else BUILTIN_POLICIES.get(name, DEFAULT_POLICY)
        cache[key] = _policy_values(policy)
    return cache[key]


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
    from runs import services
    from runs.tasks import execute_run

    kwargs = {} if turns is None else {"turns": turns}
    with transaction.atomic():
        fork = services.fork_create(parent=item.run, fork_from=item.step_index, owner=owner, policy=policy,
                                    enqueue=False, **kwargs)
        ReviewItem.objects.filter(pk=item.pk).update(fork=fork, fork_outcome=ForkOutcome.RUNNING, fork_turns=None,
                                                     fork_reason="")
    try:
        execute_run.apply_async((fork.pk,), task_id=fork.celery_id, queue=settings.RUN_QUEUE, retry=False)
    except OperationalError as exc:
        ReviewItem.objects.filter(pk=item.pk).update(fork=None, fork_outcome=ForkOutcome.NONE)
        fork.delete()
        raise services.QueueUnavailable(f"The run queue (Redis) is unavailable: {exc}") from exc
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
    if fork.stopped_by in ("max_steps", "token_budget", "watchdog"):
        return ForkResult(ForkOutcome.LOOPED, turns, fork.reason)
    if fork.success is None and fork.status == Run.Status.SUCCEEDED:
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


def fork_sentence(outcome: str, turns: int | None, reason: str) -> str:
    """The line the item shows about its fork. Pure."""
    later = f"{turns} step{'s' if turns != 1 else ''} later" if turns is not None else "later"
    if outcome == ForkOutcome.SUCCEEDED:
        return f"the fork succeeded {later}"
    if outcome == ForkOutcome.LOOPED:
        return f"the fork looped again: {reason}" if reason else "the fork looped again"
    if outcome == ForkOutcome.FAILED:
        return f"the fork failed {later}: {reason}" if reason else f"the fork failed {later}"
    if outcome == ForkOutcome.ERROR:
        return f"the fork ended in error: {reason}"
    if outcome == ForkOutcome.RUNNING:
        return "the fork is running…"
    return ""


# -- agreement -----------------------------------------------------------------


def cohen_kappa(pairs: Iterable[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over the same items. Pure.

    None when undefined: no pairs, or both raters used one and the same
    category throughout (expected agreement 1, so 0/0).
    """
    pairs = list(pairs)
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    left = Counter(a for a, _ in pairs)
    right = Counter(b for _, b in pairs)
    expected = sum(left[c] * right[c] for c in set(left) | set(right)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass
class Agreement:
    kappa: float | None
    items: int
    # (reviewer a, reviewer b, items both labelled, kappa) for each pair.
    pairs: list[tuple[str, str, int, float | None]] = field(default_factory=list)


def review_agreement(items: QuerySet[ReviewItem] | None = None) -> Agreement:
    """Kappa over items with at least two reviewers: overall (first and second
    reviewer of each item as the two raters) and per pair of reviewers."""
    qs = items if items is not None else ReviewItem.objects.all()
    rows = (ReviewLabel.objects.filter(is_current=True, item__in=qs.filter(label_count__gte=2).values("pk"))
            .order_by("item_id", "created_at", "id").values_list("item_id", "reviewer__username", "value"))
    by_item: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for item_id, reviewer, value in rows:
        by_item[item_id].append((reviewer, value))
    firsts = [(labels[0][1], labels[1][1]) for labels in by_item.values() if len(labels) >= 2]
    per_pair: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for labels in by_item.values():
        for i, (ra, va) in enumerate(labels):
            for rb, vb in labels[i + 1:]:
                key, pair = ((ra, rb), (va, vb)) if ra < rb else ((rb, ra), (vb, va))
                per_pair[key].append(pair)
    return Agreement(
        kappa=cohen_kappa(firsts),
        items=len(firsts),
        pairs=[(a, b, len(p), cohen_kappa(p)) for (a, b), p in sorted(per_pair.items())],
    )


# -- false-kill figures --------------------------------------------------------


@dataclass
class FigureRow:
    key: str
    labelled: int
    justified: int
    wrongly_killed: int
    unsure: int
    disputed: int
    stop_forks: int
    stop_forks_succeeded: int

    @property
    def decided(self) -> int:
        return self.justified + self.wrongly_killed

    @property
    def false_kill_rate(self) -> float | None:
        # Unsure and disputed items are counted as labelled, not as verdicts.
        return self.wrongly_killed / self.decided if self.decided else None

    @property
    def fork_success_rate(self) -> float | None:
        return self.stop_forks_succeeded / self.stop_forks if self.stop_forks else None


# Groupings of the figures: title -> the item columns of the group key.
FIGURE_GROUPS = {
    "detector": ("detector",),
    "tier": ("tier",),
    "policy": ("policy_name", "policy_version"),
    "threshold": ("detector", "threshold"),
}


def false_kill_figures(items: QuerySet[ReviewItem] | None = None) -> dict[str, list[FigureRow]]:
    """Per detector, tier, policy+version and threshold: labelled items, the
    verdicts, the false-kill rate, and how often forks of *stopped* runs (the
    stop tier) succeeded. One aggregate query per grouping, over items that have
    a label or a finished fork only."""
    qs = items if items is not None else ReviewItem.objects.all()
    qs = qs.filter(Q(label_count__gt=0) | Q(fork_outcome__in=FINISHED_FORK_OUTCOMES))
    stop_fork = Q(tier="stop", fork_outcome__in=FINISHED_FORK_OUTCOMES)
    aggregates = {
        "labelled": Count("pk", filter=Q(label_count__gt=0)),
        "justified": Count("pk", filter=Q(label=LabelState.JUSTIFIED)),
        "wrongly_killed": Count("pk", filter=Q(label=LabelState.WRONGLY_KILLED)),
        "unsure": Count("pk", filter=Q(label=LabelState.UNSURE)),
        "disputed": Count("pk", filter=Q(label=LabelState.DISPUTED)),
        "stop_forks": Count("pk", filter=stop_fork),
        "stop_forks_succeeded": Count("pk", filter=stop_fork & Q(fork_outcome=ForkOutcome.SUCCEEDED)),
    }
    out: dict[str, list[FigureRow]] = {}
    for title, columns in FIGURE_GROUPS.items():
        rows = qs.order_by().values(*columns).annotate(**aggregates).order_by(*columns)
        out[title] = [FigureRow(key=_group_key(title, row), **{k: row[k] for k in aggregates}) for row in rows]
    return out


def _group_key(title: str, row: dict) -> str:
    if title == "policy":
        if not row["policy_name"]:
            return "(watchdog off)"
        return f"{row['policy_name']} v{row['policy_version']}" if row["policy_version"] else row["policy_name"]
    if title == "threshold":
        return f"{row['detector']}: {row['threshold'] or '—'}"
    return str(row[title] or "—")
