"""The compare page's one write: a selection saved as a rerun group."""

from __future__ import annotations

from django.db import transaction

from runs.core.models import RerunGroup, Run


def group_save(*, owner, project_id: int, runs: list[Run], name: str = "") -> tuple[RerunGroup, int]:
    """Save `runs` as a new RerunGroup; they move into it (a run has one group).
    Returns the group and how many runs left another group for it."""
    moved = sum(1 for r in runs if r.group_id is not None)
    with transaction.atomic():
        group = RerunGroup.objects.create(name=name[:200], owner=owner, project_id=project_id)
        Run.objects.filter(pk__in=[r.pk for r in runs]).update(group=group)
    return group, moved
