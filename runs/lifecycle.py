"""What runs does when a run has ended (tracing.store.signals.run_ended): judge its
stored steps as a whole (signals, the anchor break, findings), then keep its
review items in step with its interruptions.

Connected in RunsConfig.ready; `manage.py analyse` calls runs_judge for runs
that ended long ago. The launch package, which ends runs, never imports the
reviews package, which forks them: the signal is the one way between them.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Q

from runs.core.models import Run
from runs.evaluations.services import evaluation_runs_measure
from runs.launch.run_analysis import runs_analyse
from runs.reviews.services import review_items_sync


def runs_judge(run_ids: Sequence[int], *, recompute_signals: bool = False) -> int:
    """Analyse ended runs and sync their review items, in one transaction (the
    analysis and the items change together). Returns the runs analysed."""
    with transaction.atomic():
        done = runs_analyse(run_ids, recompute_signals=recompute_signals)
        # Only runs with an interruption have items; an ended fork settles its parent's.
        with_items = Run.objects.filter(Q(intervention_count__gt=0) | Q(parent__isnull=False), pk__in=run_ids)
        for run_id in with_items.values_list("pk", flat=True):
            review_items_sync(run_id)
        evaluation_runs_measure(run_ids)
    return done


def on_run_ended(sender=None, *, run_id: int, recompute_signals: bool = False, **kwargs) -> None:
    runs_judge([run_id], recompute_signals=recompute_signals)
