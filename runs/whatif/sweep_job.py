"""What a worker does with a what-if job: replay its policies over the runs of
its snapshot, streamed out of Postgres, and store the figures."""

from __future__ import annotations

import time

from django.db import connection, transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import MD5, Cast

from runs.core.models import Run, run_goal
from runs.whatif.models import WhatIfJob
from runs.whatif.selectors import snapshot_runs
from runs.whatif.sweep import evaluate, group_steps
from tracing.core.watchdog import Policy as WatchdogPolicy
from tracing.store.step_queries import stream_steps

# Progress is written every this many runs (a write per run would cost more
# than the replay of a short run).
PROGRESS_EVERY = 250


def whatif_execute(job_id: int) -> WhatIfJob:
    # Claim: of two deliveries, one runs the job.
    if not WhatIfJob.objects.filter(pk=job_id, status=WhatIfJob.Status.QUEUED).update(status=WhatIfJob.Status.RUNNING):
        return WhatIfJob.objects.get(pk=job_id)
    job = WhatIfJob.objects.get(pk=job_id)
    started = time.perf_counter()
    try:
        policies = [WatchdogPolicy.from_dict(c) for c in job.policies]
        runs = snapshot_runs(job.filters, job.project_id).filter(id__lte=job.snapshot_max_run,
                                                                 finished_at__lte=job.snapshot_at)
        goals = _goals(runs)
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
            rows = stream_steps(list(goals))
            outcomes = evaluate(group_steps(rows, goals), policies, labels, progress)
        result = [{"config": c, "value": (job.sweep_values[i] if job.sweep_values else None), **o.as_dict()}
                  for i, (c, o) in enumerate(zip(job.policies, outcomes, strict=True))]
        WhatIfJob.objects.filter(pk=job_id).update(
            status=WhatIfJob.Status.DONE, result=result, done_runs=len(goals),
            duration_s=time.perf_counter() - started)
    except Exception as exc:  # the page must show the failure, not spin forever
        WhatIfJob.objects.filter(pk=job_id).update(status=WhatIfJob.Status.ERROR, error=f"{type(exc).__name__}: {exc}")
    return WhatIfJob.objects.get(pk=job_id)


def _goals(runs: QuerySet) -> dict[int, tuple[str, bool | None, dict | None]]:
    """Run id -> (goal, success, context). Runs of one agent share its context
    (a policy and tool schemas, tens of KB): each distinct one is read and held
    once, not once per run."""
    rows = list(runs.annotate(context_key=MD5(Cast("context", TextField())))
                .values_list("id", "prompt", "settings", "success", "context_key"))
    first = {}
    for pk, *_, key in rows:
        first.setdefault(key, pk)
    contexts = dict(Run.objects.filter(pk__in=list(first.values())).annotate(
        context_key=MD5(Cast("context", TextField()))).values_list("context_key", "context"))
    return {pk: (run_goal(prompt, settings), success, contexts.get(key) or None)
            for pk, prompt, settings, success, key in rows}
