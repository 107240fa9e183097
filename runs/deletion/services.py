"""Deleting a project: its runs in batches (tracing.store.step_deletion), then what is left of it, recorded."""

from __future__ import annotations

from django.db import transaction

from agentlab.projects.models import Project
from runs.core.models import Policy, Run, Task
from runs.evaluations.models import Evaluation
from tracing.store.models import DeletionRecord, Retention
from tracing.store.step_deletion import runs_delete

# Runs per batch when a project goes: each batch is one runs_delete (steps in their own batches).
PROJECT_RUN_BATCH = 200


def retention_set(*, project: Project, keep_days: int | None) -> None:
    """Keep the project's runs `keep_days` days (None: forever)."""
    if keep_days is None:
        Retention.objects.filter(project=project).delete()
    else:
        Retention.objects.update_or_create(project=project, defaults={"keep_days": keep_days})


def project_delete(*, project: Project, user) -> DeletionRecord:
    """Every run of the project, then its evaluations, policies, tasks, tokens, members and itself."""
    counts: dict[str, int] = {}
    while True:
        batch = list(Run.objects.filter(project=project).order_by("id").values_list("pk", flat=True)[:PROJECT_RUN_BATCH])
        if not batch:
            break
        done = runs_delete(run_ids=batch, user=user, project=project, target=f"{len(batch)} runs of project {project}")
        for key, n in done.counts.items():
            counts[key] = counts.get(key, 0) + n
        done.delete()  # one record for the project, below
    name = str(project)
    with transaction.atomic():
        # Runs and evaluations protect the policies and tasks they used: those go first.
        for model in (Evaluation, Policy, Task):
            n, _ = model.objects.filter(project=project).delete()
            if n:
                counts[model.__name__] = counts.get(model.__name__, 0) + n
        _, rest = project.delete()
        for label, n in rest.items():
            if n:
                key = label.rpartition(".")[2]
                counts[key] = counts.get(key, 0) + n
        return DeletionRecord.objects.create(what=DeletionRecord.What.PROJECT, target=f"project {name}"[:200],
                                             project=None, project_name=name[:100], user=user,
                                             username=user.get_username(), counts=counts)
