"""The Celery task that replays a what-if job: it takes the job's id and calls the service."""

from __future__ import annotations

from celery import shared_task

from runs.whatif.sweep_job import whatif_execute


@shared_task(name="runs.execute_whatif", acks_late=False, soft_time_limit=3600, time_limit=3700)
def execute_whatif(job_id: int) -> None:
    whatif_execute(job_id)
