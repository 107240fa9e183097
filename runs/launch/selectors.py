"""Reads of runs and their steps: the one run filter, a fork's trajectory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import date
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTextTransform

from runs.core.models import Run
from runs.date_filters import created_range
from tracing.core import shown_json
from tracing.core.steps import Step as StepRecord
from tracing.store.models import Step

# The `policy` filter's value for runs without a watchdog.
POLICY_OFF = "off"


@dataclass(frozen=True)
class RunFilters:
    """The filters of the run list, the dashboard and what-if; blank = no filter."""

    status: str = ""
    task: str = ""  # a task slug
    model: str = ""
    mode: str = ""
    source: str = ""
    policy: str = ""  # a policy name (every version), or POLICY_OFF
    intervened: str = ""  # "yes" | "no"
    detector: str = ""
    tier: str = ""
    steps_min: int | None = None
    steps_max: int | None = None
    outcome: str = ""  # "correct" | "wrong" | "unscored"
    stopped_by: str = ""
    anchor: str = ""  # "broken" | "kept" | a pattern of tracing.core.anchoring (the break's)
    since: date | None = None
    until: date | None = None
    forks: str = ""  # "no": runs as launched only | "only": forks only (counterfactual continuations)
    evaluation: int | None = None  # runs of this evaluation (runs.evaluations)
    strategy: str = ""  # of those, the runs of this strategy
    tag: str = ""  # runs carrying this tag
    meta: str = ""  # "key=value": runs whose metadata has it
    session: str = ""  # a session id
    # Leave out queued and running runs: figures are about runs with an outcome.
    finished: bool = False

    def query(self, **extra: Any) -> str:
        """These filters (and `extra`) as the run list's query string: a drill-down keeps every filter."""
        params = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "finished"}
        params.update(extra)
        return urlencode({k: v.isoformat() if isinstance(v, date) else v
                          for k, v in params.items() if v not in ("", None)})

    @classmethod
    def of(cls, data: Mapping[str, Any], **extra: Any) -> RunFilters:
        """From a form's cleaned data (keys it does not know are ignored)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in {**data, **extra}.items() if k in known and v is not None}
        return cls(**values)


def metadata_matches(pair: str) -> Q:
    """`key=value` as containment: the value as typed (metadata from a form is
    text), or as the JSON number / boolean it spells (from the API or OTLP)."""
    key, _, value = pair.partition("=")
    key = key.strip()
    cond = Q(metadata__contains={key: value.strip()})
    parsed = shown_json.parse(value, default=cond)
    if isinstance(parsed, (bool, int, float)) or parsed is None:
        cond |= Q(metadata__contains={key: parsed})
    return cond


def runs_filtered(qs: QuerySet[Run], f: RunFilters) -> QuerySet[Run]:
    """`qs` narrowed by the filters; each one a column the run's summary holds
    (never a scan of the steps), the dates as a range on created_at so the
    (created_at, id) indexes serve them."""
    exact = {"status": f.status, "task__slug": f.task, "model_name": f.model, "mode": f.mode, "source": f.source,
             "stopped_by": f.stopped_by, "step_count__gte": f.steps_min, "step_count__lte": f.steps_max,
             **created_range(f.since, f.until)}
    qs = qs.filter(**{k: v for k, v in exact.items() if v not in ("", None)})
    if f.policy:
        qs = qs.filter(policy__isnull=True) if f.policy == POLICY_OFF else qs.filter(policy__name=f.policy)
    if f.intervened:
        qs = qs.filter(intervention_count__gt=0) if f.intervened == "yes" else qs.filter(intervention_count=0)
    if f.detector:
        qs = qs.filter(intervention_detectors__contains=[f.detector])
    if f.tier:
        qs = qs.filter(intervention_tiers__contains=[f.tier])
    if f.outcome:
        qs = qs.filter(success__isnull=True) if f.outcome == "unscored" else qs.filter(success=f.outcome == "correct")
    if f.anchor in ("broken", "kept"):
        qs = qs.filter(first_anchor_break__isnull=f.anchor != "broken")
    elif f.anchor:
        # Served by run_anchor_pattern_idx (the same expression, same condition).
        qs = qs.alias(anchor_pattern=KeyTextTransform("pattern", "anchor_evidence")).filter(
            first_anchor_break__isnull=False, anchor_pattern=f.anchor)
    if f.forks:
        qs = qs.filter(parent__isnull=f.forks == "no")
    if f.evaluation is not None:
        qs = qs.filter(evaluation_entry__evaluation_id=f.evaluation)
    if f.strategy:
        qs = qs.filter(evaluation_entry__strategy=f.strategy)
    if f.tag:
        qs = qs.filter(tags__contains=[f.tag])  # run_tags_gin
    if f.meta:
        qs = qs.filter(metadata_matches(f.meta))  # run_metadata_gin (jsonb_path_ops, @>)
    if f.session:
        qs = qs.filter(session_id=f.session)
    if f.finished:
        qs = qs.exclude(status__in=Run.LIVE_STATUSES)
    return qs


def trajectory(run: Run, *, lo: int = 0, hi: int | None = None, limit: int | None = None) -> list[Step]:
    """Steps lo..hi of the run's trajectory, in index order, at most `limit`.

    A fork's first steps are its parent's: the parent's steps before the fork
    point are read from the parent (never copied), the fork's own start at
    `fork_from`. Two queries at most.
    """
    own = Step.objects.filter(run_id=run.pk, index__gte=lo).order_by("index")
    if hi is not None:
        own = own.filter(index__lte=hi)
    if run.parent_id is None or lo >= run.fork_from:
        return list(own[:limit])
    upto = run.fork_from - 1 if hi is None else min(hi, run.fork_from - 1)
    inherited = list(Step.objects.filter(run_id=run.parent_id, index__gte=lo, index__lte=upto)
                     .order_by("index")[:limit])
    if hi is not None and hi < run.fork_from:
        return inherited
    rest = None if limit is None else max(0, limit - len(inherited))
    return inherited + list(own.filter(index__gte=run.fork_from)[:rest])


def run_history(run: Run) -> list[StepRecord]:
    """The step records the model's context is built from (a fork's parent's first)."""
    return [s.to_record() for s in trajectory(run)]


def steps_after(run: Run, after: int, limit: int) -> list[Step]:
    """The run's own steps after the cursor: the run page's next page and live poll."""
    return list(Step.objects.filter(run=run, index__gt=after).order_by("index")[:limit])
