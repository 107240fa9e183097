"""The review queue's reads: filters, the item's window, agreement, false-kill figures, export rows."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest

from runs.core import access
from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from tracing.store.models import Step

FINISHED_FORK_OUTCOMES = (ForkOutcome.SUCCEEDED, ForkOutcome.FAILED, ForkOutcome.LOOPED, ForkOutcome.ERROR)


def items_for(request: HttpRequest) -> QuerySet[ReviewItem]:
    """The review items the user may see: those of the runs runs.core.access.runs_for
    gives (the current project's)."""
    return ReviewItem.objects.filter(run__project_id=access.project_id(request))


def filter_items(qs: QuerySet[ReviewItem], data: dict) -> QuerySet[ReviewItem]:
    """The queue's filters (all but the cursor and the sort), shared with the figures and the export."""
    if data.get("detector"):
        qs = qs.filter(detector=data["detector"])
    if data.get("tier"):
        qs = qs.filter(tier=data["tier"])
    if data.get("policy"):
        name, _, version = data["policy"].partition(":")
        qs = qs.filter(policy_name=name)
        if version.isdigit():
            qs = qs.filter(policy_version=int(version))
    if data.get("task"):
        qs = qs.filter(task__slug=data["task"])
    if data.get("model"):
        qs = qs.filter(model_name=data["model"])
    if data.get("label") == "labelled":
        qs = qs.filter(label_count__gt=0)
    elif data.get("label"):
        qs = qs.filter(label=data["label"])
    return qs


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


# -- export ------------------------------------------------------------------

EXPORT_COLUMNS = ("run", "step", "detector", "tier", "policy", "policy_version", "threshold", "task", "model",
                  "reviewer", "label", "note", "labelled_at", "current", "evidence", "fork_run", "fork_outcome",
                  "fork_turns", "fork_reason")


def export_rows(items: QuerySet[ReviewItem], *, history: bool = False) -> Iterator[dict]:
    """One row per label of the items (current labels only, unless `history`), with the step's evidence."""
    labels = ReviewLabel.objects.filter(item__in=items.values("pk"))
    if not history:
        labels = labels.filter(is_current=True)
    evidence = Subquery(Step.objects.filter(run_id=OuterRef("item__run_id"), index=OuterRef("item__step_index"))
                        .values("meta__evidence")[:1])
    rows = (labels.annotate(evidence=evidence, task_slug=F("item__task__slug"))
            .select_related("item", "reviewer").order_by("item__run_id", "item__step_index", "created_at", "id"))
    for label in rows.iterator(chunk_size=2000):
        item = label.item
        yield {
            "run": item.run_id, "step": item.step_index, "detector": item.detector, "tier": item.tier,
            "policy": item.policy_name, "policy_version": item.policy_version, "threshold": item.threshold,
            "task": label.task_slug, "model": item.model_name, "reviewer": label.reviewer.username,
            "label": label.value, "note": label.note, "labelled_at": label.created_at.isoformat(),
            "current": label.is_current, "evidence": label.evidence if label.evidence is not None else {},
            "fork_run": item.fork_id, "fork_outcome": item.fork_outcome or None, "fork_turns": item.fork_turns,
            "fork_reason": item.fork_reason or None,
        }
