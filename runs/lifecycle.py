"""What runs does when a run has ended (tracing.signals.run_ended): judge its
stored steps as a whole (signals, the anchor break), then keep its review
items in step with its interruptions.

Connected in RunsConfig.ready; `manage.py analyse` calls it for runs that ended
long ago. The launch package, which ends runs, never imports the reviews
package, which forks them: the signal is the one way between them.
"""

from __future__ import annotations

from django.db import transaction

from runs.launch.analysis import run_analyse
from runs.reviews.services import review_items_sync


def on_run_ended(sender=None, *, run_id: int, recompute_signals: bool = False, **kwargs) -> None:
    # One transaction: the run's analysis and its review items change together.
    with transaction.atomic():
        run_analyse(run_id, recompute_signals=recompute_signals)
        review_items_sync(run_id)
