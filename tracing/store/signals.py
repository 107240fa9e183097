"""What the Django side of tracing tells the apps that judge runs.

tracing never imports those apps (DESIGN.md 3): they connect to these signals
when they are ready (runs does in RunsConfig.ready).
"""

from __future__ import annotations

from django.dispatch import Signal

# A run has ended (answered, failed, stopped, errored) or the steps of an ended
# run changed: its steps are final and can be judged as a whole. Arguments:
# run_id, and recompute_signals=True when the live watchdog did not watch the
# run (ingested runs), so its signals must be computed over the stored steps.
run_ended = Signal()


def send_run_ended(run_id: int, *, recompute_signals: bool = False) -> None:
    """Tell the receivers. A receiver's failure is logged (django.dispatch), never
    raised: the run is over either way, and `manage.py analyse` redoes the work."""
    run_ended.send_robust(sender=None, run_id=run_id, recompute_signals=recompute_signals)
