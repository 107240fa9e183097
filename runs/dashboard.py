"""Dashboard aggregates: read from the per-run summary columns only (never a
scan of the steps table), whatever the filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db import connection
from django.db.models import Aggregate, Avg, Count, F, FloatField, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from runs.models import Run
from tracing.metrics import pass_at_k, pass_hat_k

# pass^k and pass@k on the dashboard use this k (or n when a group has fewer runs).
DASHBOARD_K = 3
# Step-count histogram: one bar per step count up to this, then one bar for the rest.
HISTOGRAM_MAX = 60
# Groups shown per "by task / model / policy" table.
MAX_GROUPS = 50


class Percentile(Aggregate):
    function = "percentile_disc"
    template = "%(function)s(%(p)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, p: float, **extra):
        super().__init__(expression, p=p, **extra)


@dataclass(frozen=True)
class Filters:
    since: date
    until: date
    task: str = ""
    model: str = ""
    mode: str = ""
    policy: str = ""

    def runs(self) -> QuerySet[Run]:
        qs = Run.objects.filter(created_at__date__gte=self.since, created_at__date__lte=self.until)
        # Live runs have no outcome yet: the figures are about finished runs.
        qs = qs.exclude(status__in=Run.LIVE_STATUSES)
        if self.task:
            qs = qs.filter(task__slug=self.task)
        if self.model:
            qs = qs.filter(model_name=self.model)
        if self.mode:
            qs = qs.filter(mode=self.mode)
        if self.policy:
            qs = qs.filter(policy__name=self.policy) if self.policy != "off" else qs.filter(policy__isnull=True)
        return qs

    def run_list_url(self, **extra: Any) -> str:
        params = {"since": self.since.isoformat(), "until": self.until.isoformat(), "task": self.task,
                  "model": self.model, "mode": self.mode, "policy": "" if self.policy == "off" else self.policy}
        params.update(extra)
        return reverse("runs:list") + "?" + urlencode({k: v for k, v in params.items() if v not in ("", None)})

    @classmethod
    def default(cls) -> Filters:
        today = timezone.now().date()
        return cls(since=today - timedelta(days=30), until=today)


def totals(qs: QuerySet[Run]) -> dict[str, Any]:
    agg = qs.aggregate(
        runs=Count("id"),
        scored=Count("id", filter=Q(success__isnull=False)),
        successes=Count("id", filter=Q(success=True)),
        over_max=Count("id", filter=Q(stopped_by="max_steps")),
        interrupted=Count("id", filter=Q(intervention_count__gt=0)),
        anchor_breaks=Count("id", filter=Q(first_anchor_break__isnull=False)),
        mean_steps=Avg("step_count"),
        p95_steps=Percentile("step_count", 0.95),
        steps=Sum("step_count"),
        tokens=Sum(F("prompt_tokens") + F("completion_tokens")),
        latency_ms=Sum("latency_ms"),
    )
    runs = agg["runs"] or 0
    steps = agg["steps"] or 0

    def rate(n: int, d: int) -> float | None:
        return n / d if d else None

    return {
        **agg,
        "success_rate": rate(agg["successes"], agg["scored"]),
        "over_max_rate": rate(agg["over_max"], runs),
        "interrupted_rate": rate(agg["interrupted"], runs),
        "anchor_break_rate": rate(agg["anchor_breaks"], runs),
        "tokens_per_run": rate(agg["tokens"] or 0, runs),
        "tokens_per_step": rate(agg["tokens"] or 0, steps),
        "latency_per_run_ms": rate(agg["latency_ms"] or 0, runs),
        "latency_per_step_ms": rate(agg["latency_ms"] or 0, steps),
    }


def step_histogram(qs: QuerySet[Run]) -> list[tuple[int, int]]:
    """(step count, runs); counts above HISTOGRAM_MAX share the last bar."""
    rows = qs.values_list("step_count").annotate(n=Count("id")).order_by("step_count")
    bars: dict[int, int] = {}
    for steps, n in rows:
        key = min(steps, HISTOGRAM_MAX)
        bars[key] = bars.get(key, 0) + n
    return sorted(bars.items())


def _unnest_counts(qs: QuerySet[Run], column: str) -> list[tuple[str, int]]:
    inner, params = qs.values(column).query.sql_with_params()
    sql = f"SELECT v, count(*) FROM ({inner}) s, unnest(s.{column}) v GROUP BY v ORDER BY count(*) DESC, v"
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return [(v, n) for v, n in cur.fetchall()]


def interventions_by_detector(qs: QuerySet[Run]) -> list[tuple[str, int]]:
    """Runs with at least one intervention of each detector."""
    return _unnest_counts(qs, "intervention_detectors")


def interventions_by_tier(qs: QuerySet[Run]) -> list[tuple[str, int]]:
    return _unnest_counts(qs, "intervention_tiers")


def by_group(qs: QuerySet[Run], field: str) -> list[dict[str, Any]]:
    rows = (
        qs.values(field)
        .annotate(
            runs=Count("id"),
            scored=Count("id", filter=Q(success__isnull=False)),
            successes=Count("id", filter=Q(success=True)),
            mean_steps=Avg("step_count"),
            over_max=Count("id", filter=Q(stopped_by="max_steps")),
        )
        .order_by("-runs")[:MAX_GROUPS]
    )
    out = []
    for row in rows:
        n, c = row["scored"], row["successes"]
        k = min(DASHBOARD_K, n)
        out.append({
            "key": row[field] if row[field] is not None else "—",
            **row,
            "success_rate": c / n if n else None,
            "k": k,
            "pass_at_k": pass_at_k(n, c, k) if n else None,
            "pass_hat_k": pass_hat_k(n, c, k) if n else None,
        })
    return out


def over_time(qs: QuerySet[Run]) -> list[dict[str, Any]]:
    rows = (
        qs.annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(
            runs=Count("id"),
            scored=Count("id", filter=Q(success__isnull=False)),
            successes=Count("id", filter=Q(success=True)),
            over_max=Count("id", filter=Q(stopped_by="max_steps")),
            mean_steps=Avg("step_count"),
        )
        .order_by("day")
    )
    return [
        {**r, "success_rate": r["successes"] / r["scored"] if r["scored"] else None,
         "over_max_rate": r["over_max"] / r["runs"] if r["runs"] else None}
        for r in rows
    ]
