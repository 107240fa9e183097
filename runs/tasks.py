from __future__ import annotations

from celery import shared_task

from runs import services


@shared_task(bind=True, name="runs.execute_run")
def execute_run(self, run_id: int) -> None:
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    services.run_execute(run_id=run_id, task_id=self.request.id or "", redelivered=redelivered)


@shared_task(name="runs.execute_whatif", acks_late=False, soft_time_limit=3600, time_limit=3700)
def execute_whatif(job_id: int) -> None:
    from runs.whatif_service import whatif_execute

    whatif_execute(job_id)
