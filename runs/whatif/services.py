"""A what-if job is created here: validated, its data snapshot fixed, cached,
and sent to a worker (runs.whatif.sweep_job replays it)."""

from __future__ import annotations

from typing import Any

from django.db.models import Max
from django.utils import timezone

from runs.core.models import Policy
from runs.core.queue import enqueue
from runs.reviews.models import LabelState, ReviewItem
from runs.whatif.models import WhatIfJob
from runs.whatif.selectors import snapshot_runs
from runs.whatif.sweep import cache_key, sweep_policies
from runs.whatif.tasks import execute_whatif
from tracing.core.watchdog import Policy as WatchdogPolicy


def whatif_create(*, user, project_id: int, config: dict[str, Any], sweep_path: str = "", sweep_values: list[float] | None = None,
                  filters: dict[str, Any] | None = None, base_policy: Policy | None = None) -> WhatIfJob:
    """Validate, fix the snapshot and return the cached job or a new queued one."""
    filters = filters or {}
    policies = (sweep_policies(config, sweep_path, sweep_values or []) if sweep_path
                else [WatchdogPolicy.from_dict(config)])
    configs = [p.to_dict() for p in policies]
    runs = snapshot_runs(filters, project_id)
    snapshot_max = runs.aggregate(m=Max("id"))["m"] or 0
    labelled = ReviewItem.objects.filter(run__in=runs.values("id")).filter(
        label__in=[LabelState.JUSTIFIED, LabelState.WRONGLY_KILLED]
    ).values_list("run_id", "step_index", "label")
    labels: dict[str, list] = {}
    for run_id, step, label in labelled:
        labels.setdefault(str(run_id), []).append([step, label])
    snapshot = {"project": project_id, "max_run": snapshot_max, "finished": runs.count(), "labels": labels,
                "filters": filters}
    key = cache_key(configs, snapshot)
    existing = WhatIfJob.objects.filter(key=key).exclude(status=WhatIfJob.Status.ERROR).first()
    if existing is not None:
        return existing
    WhatIfJob.objects.filter(key=key, status=WhatIfJob.Status.ERROR).delete()
    job = WhatIfJob.objects.create(
        key=key, created_by=user, project_id=project_id, base_policy=base_policy, policies=configs, sweep_path=sweep_path,
        sweep_values=list(sweep_values or []), filters=filters, snapshot_at=timezone.now(),
        snapshot_max_run=snapshot_max, labels=labels, total_runs=snapshot["finished"],
    )
    enqueue(execute_whatif, job.pk, undo=job.delete)
    return job
