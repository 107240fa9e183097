"""The Celery tasks of runs: execute a run (it takes the run's id and calls the
service), the reconciler's sweep (beat's, on the control queue), and the
sweeping thread every worker starts."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from runs.core.queue import enqueue
from runs.launch.execution import run_execute
from runs.launch.sweeper import Sweeper, sweep_locked

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


# Every worker sweeps (runs.launch.sweeper), so losing the control worker and
# beat loses no run. At once when it starts, too: a worker coming back after a
# kill sweeps without waiting for anyone's tick.
_sweeper: Sweeper | None = None


@worker_ready.connect
def _start_sweeping(sender=None, **kwargs) -> None:
    global _sweeper
    _sweeper = Sweeper(send=send_run)
    _sweeper.start()


@worker_shutdown.connect
def _stop_sweeping(sender=None, **kwargs) -> None:
    if _sweeper is not None:
        _sweeper.stop()
