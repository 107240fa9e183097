"""The runs a what-if replays."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from runs.core.models import Run
from runs.launch.selectors import RunFilters, runs_filtered


def snapshot_runs(job_filters: dict[str, Any], project_id: int) -> QuerySet[Run]:
    """The finished runs of a what-if: the run filter's task / model / source,
    over its project's runs."""
    return runs_filtered(Run.objects.for_project(project_id), RunFilters.of(job_filters, finished=True))
