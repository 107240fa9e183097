"""The Celery tasks of runs: execute a run (it takes the run's id and calls the
service), and the reconciler's sweep (on the control queue)."""

from __future__ import annotations

import contextlib
import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from kombu.exceptions import OperationalError

from runs.core.queue import enqueue
from runs.health.sweeps import sweep_locked
from runs.launch.execution import run_execute

log = logging.getLogger(__name__)


@shared_task(bind=True, name="runs.execute_run")
def execute_run(self, run_id: int) -> None:
    run_execute(run_id=run_id, task_id=self.request.id or "")


def send_run(run_id: int, task_id: str) -> None:
    """The reconciler's way to send a run's message again (QueueUnavailable
    when Redis is down: nothing to undo, the next sweep tries again)."""
    enqueue(execute_run, run_id, task_id=task_id, undo=lambda: None)


@shared_task(name="runs.reconcile", ignore_result=True)
def reconcile_runs() -> dict[str, int]:
    # Under the sweep's advisory lock: any number of beats or workers may ask, one sweeps at a time.
    sweep = sweep_locked(send=send_run)
    return vars(sweep) if sweep is not None else {"skipped": 1}


@worker_ready.connect
def _sweep_when_a_worker_starts(sender=None, **kwargs) -> None:
    # A worker that comes back (after a kill, a reboot) asks for a sweep at
    # once instead of waiting for beat's next tick.
    with contextlib.suppress(OperationalError):
        reconcile_runs.apply_async(queue=settings.RUN_CONTROL_QUEUE, retry=False,
                                   expires=settings.RECONCILE_INTERVAL_S * 2)
