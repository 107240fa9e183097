"""Celery tasks of the Django side of tracing: the work an ingestion request
hands off so the exporter gets its answer when the spans are stored."""

from __future__ import annotations

from celery import shared_task

from tracing.store.guard import guard_stops_expire
from tracing.store.ingest.services import runs_ended, traces_close_stale
from tracing.store.step_deletion import retention_sweep
from tracing.store.step_indexer import index_pending_steps


# Analysis is idempotent (it recomputes from the stored steps), so a redelivery is harmless.
@shared_task(ignore_result=True, acks_late=True, soft_time_limit=600, time_limit=660)
def analyse_ingested(run_ids: list[int]) -> None:
    runs_ended([int(r) for r in run_ids])


@shared_task(ignore_result=True, soft_time_limit=600, time_limit=660)
def close_stale_traces() -> int:
    # Guarded runs whose agent went silent after a stop end on the same beat.
    stopped = guard_stops_expire()
    runs_ended(stopped)
    return len(traces_close_stale()) + len(stopped)


# A sweep deletes in batches and can be cut short anywhere: the next one goes on.
@shared_task(ignore_result=True, soft_time_limit=1800, time_limit=1860)
def delete_expired_runs() -> int:
    return len(retention_sweep())


@shared_task(ignore_result=True, soft_time_limit=60, time_limit=90)
def index_steps() -> int:
    """Beat's tick of the search indexer (the workers' sweepers run it too); -1: another process was indexing."""
    done = index_pending_steps()
    return -1 if done is None else done
