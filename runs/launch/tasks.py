"""The Celery task that executes a run: it takes the run's id and calls the service."""

from __future__ import annotations

from celery import shared_task

from runs.launch.execution import run_execute


@shared_task(bind=True, name="runs.execute_run")
def execute_run(self, run_id: int) -> None:
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    run_execute(run_id=run_id, task_id=self.request.id or "", redelivered=redelivered)
