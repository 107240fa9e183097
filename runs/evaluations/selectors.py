"""Reads of evaluations: the report of the evaluation page, from one query.

The page reads each run's summary columns and its EvaluationRun measures,
never the steps. Runs that ended in `error` (the model endpoint or the worker
failed) and runs a person stopped say nothing about a strategy: they are
counted apart and left out of every figure.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from runs.agent.strategies import STRATEGIES
from runs.core.models import Run
from runs.core.prices import price_of
from runs.core.terms import TERMS, term
from runs.evaluations.models import Evaluation, EvaluationRun
from tracing.core.intervals import bounded_mean_interval, wilson
from tracing.core.metrics import pass_at_k, pass_hat_k, percentile

# A run ended by a budget rather than by an answer.
BUDGET_ENDS = ("max_steps", "token_budget", "wall_time", "cost_budget")


@dataclass
class Figure:
    """A number with its 95 % interval and what it was computed over."""

    value: float | None
    low: float | None = None
    high: float | None = None
    count: int = 0  # numerator of a rate
    n: int = 0  # runs (or tasks) it is computed over
    p95: float | None = None


def _rate(count: int, n: int) -> Figure:
    ci = wilson(count, n)
    return Figure(count / n if n else None, *(ci or (None, None)), count=count, n=n)


def _mean(values: list[float], *, p95: bool = False, high: float = math.inf) -> Figure:
    """The mean of a quantity that cannot be negative (steps, seconds, tokens,
    dollars; a share when high=1): its t interval clipped to what it can take,
    so a few short runs never read as "[-0.01–1.58] s"."""
    if not values:
        return Figure(None)
    ci = bounded_mean_interval(values, 0.0, high)
    return Figure(sum(values) / len(values), *(ci or (None, None)), n=len(values),
                  p95=percentile(values, 95) if p95 else None)


def _over_tasks(values: list[float]) -> Figure:
    if not values:
        return Figure(None)
    ci = bounded_mean_interval(values)
    return Figure(sum(values) / len(values), *(ci or (None, None)), n=len(values))


@dataclass
class StrategyReport:
    strategy: str
    label: str
    runs_url: str
    ended: int = 0  # runs that count: ended on their own (finished)
    live: int = 0
    errors: int = 0
    stopped: int = 0
    errors_url: str = ""
    success: Figure = field(default_factory=lambda: Figure(None))
    success_url: str = ""
    coverage: Figure = field(default_factory=lambda: Figure(None))
    invalid: Figure = field(default_factory=lambda: Figure(None))
    recovery: Figure = field(default_factory=lambda: Figure(None))
    steps: Figure = field(default_factory=lambda: Figure(None))
    latency: Figure = field(default_factory=lambda: Figure(None))
    tokens: Figure = field(default_factory=lambda: Figure(None))
    cost: Figure = field(default_factory=lambda: Figure(None))  # dollars per run at today's prices
    timeouts: Figure = field(default_factory=lambda: Figure(None))
    timeouts_url: str = ""
    pass_at: Figure = field(default_factory=lambda: Figure(None))
    pass_hat: Figure = field(default_factory=lambda: Figure(None))
    layers: dict[str, int] = field(default_factory=dict)


@dataclass
class TaskCell:
    solved: int
    scored: int
    errors: int
    url: str

    @property
    def state(self) -> str:
        if not self.scored:
            return "none"
        return "all" if self.solved == self.scored else ("some" if self.solved else "zero")


@dataclass
class TaskRow:
    slug: str
    title: str
    cells: list[TaskCell]


@dataclass
class EvaluationReport:
    evaluation: Evaluation
    strategies: list[StrategyReport]
    tasks: list[TaskRow]
    total: int
    live: int
    errors: int
    k: int
    layers: list[str]  # layer names seen, when runs carry an attribution
    has_attribution: bool


def runs_url(evaluation_id: int, *, base: str = "", **filters: Any) -> str:
    """The run list filtered to these runs of the evaluation (`base`: the list's URL, reversed once a page)."""
    params = {"evaluation": evaluation_id, **{k: v for k, v in filters.items() if v not in ("", None)}}
    return f"{base or reverse('runs:list')}?{urlencode(params)}"


def _attribution_field() -> bool:
    # Another feature adds run attribution; read it where it exists.
    return any(f.name == "attribution" for f in Run._meta.get_fields())


def _layer(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("layer")
    return str(value) if value else None


def evaluation_report(evaluation: Evaluation) -> EvaluationReport:
    has_attribution = _attribution_field()
    columns = ["strategy", "measured", "coverage", "actions", "invalid_actions", "tool_errors", "run__status",
               "run__success", "run__step_count", "run__prompt_tokens", "run__completion_tokens",
               "run__started_at", "run__finished_at", "run__stopped_by", "run__task__slug", "run__task__title"]
    if has_attribution:
        columns.append("run__attribution")
    rows = list(EvaluationRun.objects.filter(evaluation=evaluation).values(*columns))
    order = [s for s in evaluation.strategies if s in STRATEGIES] + sorted(
        {r["strategy"] for r in rows} - set(evaluation.strategies))
    by_strategy: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_strategy[row["strategy"]].append(row)
    k = evaluation.reruns
    # Every run of an evaluation has its model; the price table is read only for a priced one.
    price = price_of(evaluation.provider, evaluation.model_name)
    url = partial(runs_url, evaluation.pk, base=reverse("runs:list"))
    reports, layers_seen = [], set()
    # task -> strategy -> [solved, scored, errors]
    cells: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    titles: dict[str, str] = {}
    for strategy in order:
        report = StrategyReport(strategy, term(strategy) if strategy in TERMS else STRATEGIES.get(strategy, strategy),
                                url(strategy=strategy))
        report.errors_url = url(strategy=strategy, status=Run.Status.ERROR)
        report.success_url = url(strategy=strategy, outcome="correct")
        report.timeouts_url = url(strategy=strategy, status=Run.Status.FINISHED)
        ended = []
        for row in by_strategy[strategy]:
            slug = row["run__task__slug"]
            titles[slug] = row["run__task__title"]
            status = row["run__status"]
            if status in Run.LIVE_STATUSES:
                report.live += 1
            elif status == Run.Status.ERROR:
                report.errors += 1
                cells[slug][strategy][2] += 1
            elif status == Run.Status.STOPPED:
                report.stopped += 1
            else:
                ended.append(row)
                if row["run__success"] is not None:
                    cells[slug][strategy][1] += 1
                    cells[slug][strategy][0] += bool(row["run__success"])
        report.ended = len(ended)
        scored = [r for r in ended if r["run__success"] is not None]
        report.success = _rate(sum(1 for r in scored if r["run__success"]), len(scored))
        report.coverage = _mean([r["coverage"] for r in ended if r["measured"] and r["coverage"] is not None],
                                high=1.0)
        measured = [r for r in ended if r["measured"]]
        invalid = sum(r["invalid_actions"] for r in measured)
        report.invalid = _rate(invalid, invalid + sum(r["actions"] for r in measured))
        hit = [r for r in measured if r["tool_errors"] and r["run__success"] is not None]
        report.recovery = _rate(sum(1 for r in hit if r["run__success"]), len(hit))
        report.steps = _mean([float(r["run__step_count"]) for r in ended], p95=True)
        report.latency = _mean([(r["run__finished_at"] - r["run__started_at"]).total_seconds() for r in ended
                                if r["run__started_at"] and r["run__finished_at"]], p95=True)
        report.tokens = _mean([float(r["run__prompt_tokens"] + r["run__completion_tokens"]) for r in ended], p95=True)
        report.cost = _mean([price.cost(r["run__prompt_tokens"], r["run__completion_tokens"]) for r in ended],
                            p95=True)
        report.timeouts = _rate(sum(1 for r in ended if r["run__stopped_by"] in BUDGET_ENDS), len(ended))
        per_task: dict[str, list[bool]] = defaultdict(list)
        for r in scored:
            per_task[r["run__task__slug"]].append(bool(r["run__success"]))
        complete = [outcomes for outcomes in per_task.values() if len(outcomes) >= k]
        report.pass_at = _over_tasks([pass_at_k(len(o), sum(o), k) for o in complete])
        report.pass_hat = _over_tasks([pass_hat_k(len(o), sum(o), k) for o in complete])
        if has_attribution:
            report.layers = dict(Counter(layer for r in scored if not r["run__success"]
                                         if (layer := _layer(r["run__attribution"]))))
            layers_seen |= set(report.layers)
        reports.append(report)
    tasks = [
        TaskRow(slug, titles.get(slug, slug), [
            TaskCell(*cells[slug][s], url=url(strategy=s, task=slug)) for s in order])
        for slug in sorted(titles)
    ]
    return EvaluationReport(
        evaluation=evaluation, strategies=reports, tasks=tasks, total=len(rows),
        live=sum(r.live for r in reports), errors=sum(r.errors for r in reports), k=k,
        layers=sorted(layers_seen), has_attribution=has_attribution,
    )


def evaluation_progress(evaluation: Evaluation) -> dict[str, int]:
    """Runs of the evaluation per status (the live progress line)."""
    counts = Counter(EvaluationRun.objects.filter(evaluation=evaluation).values_list("run__status", flat=True))
    total = sum(counts.values())
    live = sum(counts[s] for s in Run.LIVE_STATUSES)
    return {"total": total, "live": live, "done": total - live, "errors": counts[Run.Status.ERROR]}
