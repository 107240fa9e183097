"""WhatIfJob lifecycle: create (validate, snapshot, cache), execute (in a worker)."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone
from kombu.exceptions import OperationalError

from runs.models import Policy, Run, WhatIfJob
from runs.reviews.models import LabelState, ReviewItem
from runs.whatif.replay import cache_key, evaluate, group_steps, sweep_policies
from tracing.watchdog import Policy as WatchdogPolicy

# Rows fetched per round trip while streaming steps out of Postgres.
FETCH_ROWS = 5000
# Progress is written every this many runs (a write per run would cost more
# than the replay of a short run).
PROGRESS_EVERY = 250


class WhatIfError(ValueError):
    pass


def _snapshot_runs(filters: dict[str, Any]):
    qs = Run.objects.exclude(status__in=Run.LIVE_STATUSES)
    if filters.get("task"):
        qs = qs.filter(task__slug=filters["task"])
    if filters.get("model"):
        qs = qs.filter(model_name=filters["model"])
    if filters.get("source"):
        qs = qs.filter(source=filters["source"])
    return qs


def whatif_create(*, user, config: dict[str, Any], sweep_path: str = "", sweep_values: list[float] | None = None,
                  filters: dict[str, Any] | None = None, base_policy: Policy | None = None) -> WhatIfJob:
    """Validate, fix the snapshot and return the cached job or a new queued one."""
    filters = filters or {}
    policies = (sweep_policies(config, sweep_path, sweep_values or []) if sweep_path
                else [WatchdogPolicy.from_dict(config)])
    configs = [p.to_dict() for p in policies]
    runs = _snapshot_runs(filters)
    snapshot_max = runs.aggregate(m=Max("id"))["m"] or 0
    labelled = ReviewItem.objects.filter(run__in=runs.values("id")).filter(
        label__in=[LabelState.JUSTIFIED, LabelState.WRONGLY_KILLED]
    ).values_list("run_id", "step_index", "label")
    labels: dict[str, list] = {}
    for run_id, step, label in labelled:
        labels.setdefault(str(run_id), []).append([step, label])
    snapshot = {"max_run": snapshot_max, "finished": runs.count(), "labels": labels, "filters": filters}
    key = cache_key(configs, snapshot)
    existing = WhatIfJob.objects.filter(key=key).exclude(status=WhatIfJob.Status.ERROR).first()
    if existing is not None:
        return existing
    WhatIfJob.objects.filter(key=key, status=WhatIfJob.Status.ERROR).delete()
    job = WhatIfJob.objects.create(
        key=key, created_by=user, base_policy=base_policy, policies=configs, sweep_path=sweep_path,
        sweep_values=list(sweep_values or []), filters=filters, snapshot_at=timezone.now(),
        snapshot_max_run=snapshot_max, labels=labels, total_runs=snapshot["finished"],
    )
    from runs.tasks import execute_whatif

    try:
        execute_whatif.apply_async((job.pk,), queue=settings.RUN_QUEUE, retry=False)
    except OperationalError as exc:
        job.delete()
        raise WhatIfError(f"The run queue (Redis) is unavailable: {exc}") from exc
    return job


def whatif_execute(job_id: int) -> WhatIfJob:
    # Claim: of two deliveries, one runs the job.
    if not WhatIfJob.objects.filter(pk=job_id, status=WhatIfJob.Status.QUEUED).update(status=WhatIfJob.Status.RUNNING):
        return WhatIfJob.objects.get(pk=job_id)
    job = WhatIfJob.objects.get(pk=job_id)
    started = time.perf_counter()
    try:
        policies = [WatchdogPolicy.from_dict(c) for c in job.policies]
        runs = _snapshot_runs(job.filters).filter(id__lte=job.snapshot_max_run, finished_at__lte=job.snapshot_at)
        goals = {pk: (prompt, success) for pk, prompt, success in runs.values_list("id", "prompt", "success")}
        labels = {int(k): [(s, lab) for s, lab in v] for k, v in job.labels.items()}
        WhatIfJob.objects.filter(pk=job_id).update(total_runs=len(goals))

        def progress(done: int) -> None:
            if done % PROGRESS_EVERY == 0:
                WhatIfJob.objects.filter(pk=job_id).update(done_runs=done)

        outer = connection.in_atomic_block  # tests run inside a transaction already
        with transaction.atomic(), connection.cursor() as cur:
            # One consistent view of the steps for the whole replay, streamed
            # with a server-side cursor instead of loading every step at once.
            if not outer:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows = _stream_steps(list(goals))
            outcomes = evaluate(group_steps(rows, goals), policies, labels, progress)
        result = [{"config": c, "value": (job.sweep_values[i] if job.sweep_values else None), **o.as_dict()}
                  for i, (c, o) in enumerate(zip(job.policies, outcomes, strict=True))]
        WhatIfJob.objects.filter(pk=job_id).update(
            status=WhatIfJob.Status.DONE, result=result, done_runs=len(goals),
            duration_s=time.perf_counter() - started)
    except Exception as exc:  # the page must show the failure, not spin forever
        WhatIfJob.objects.filter(pk=job_id).update(status=WhatIfJob.Status.ERROR, error=f"{type(exc).__name__}: {exc}")
    return WhatIfJob.objects.get(pk=job_id)


def _stream_steps(run_ids: list[int]):
    if not run_ids:
        return
    conn = connection.connection  # psycopg: a named cursor is server-side
    with conn.cursor(name="whatif_steps") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(
            "SELECT run_id, index, kind, text, tool, args, meta FROM tracing_step "
            "WHERE run_id = ANY(%s) ORDER BY run_id, index",
            [run_ids],
        )
        for run_id, index, kind, text, tool, args, meta in cur:
            yield run_id, index, kind, text, tool, _json(args), _json(meta)


def _json(value):
    # Django registers a loader that leaves jsonb as text on its connection.
    if isinstance(value, str):
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
