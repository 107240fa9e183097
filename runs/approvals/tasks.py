from __future__ import annotations

from celery import shared_task

from runs.approvals.services import approvals_expire


@shared_task(name="runs.expire_approvals")
def expire_approvals() -> int:
    return approvals_expire()
