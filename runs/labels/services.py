"""Writes of a run's tags, metadata and session (the run page's form)."""

from __future__ import annotations

from django.db import transaction

from runs.core.models import Run
from tracing.core.label_limits import Labels


def run_labels_set(*, run: Run, labels: Labels) -> Run:
    """Replace the run's labels with `labels` (already checked by tracing.core.label_limits)."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(tags=labels.tags, metadata=labels.metadata, session_id=labels.session_id)
    run.tags, run.metadata, run.session_id = labels.tags, labels.metadata, labels.session_id
    return run
