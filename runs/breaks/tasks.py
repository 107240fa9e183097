"""The Celery task that re-analyses a project's runs after a pattern's state
changed there: it takes ids, and calls the service."""

from __future__ import annotations

from celery import shared_task

from runs.breaks.reanalysis import breaks_reanalyse


# Idempotent (the service reads the state when it runs), so a redelivery is harmless.
@shared_task(name="runs.breaks_reanalyse", acks_late=True, soft_time_limit=3600, time_limit=3700)
def reanalyse_pattern(project_id: int, pattern: str) -> int:
    return breaks_reanalyse(project_id, pattern)
