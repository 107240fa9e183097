"""Sending work to the Celery workers, with cleanup when the broker is down."""

from __future__ import annotations

from collections.abc import Callable

from celery import Task
from django.conf import settings
from kombu.exceptions import OperationalError


class QueueUnavailable(Exception):
    """The broker (Redis) did not take the work; nothing was left behind."""


def enqueue(task: Task, *args, task_id: str | None = None, undo: Callable[[], None]) -> None:
    """Send `task(*args)` to the run queue, after the rows it works on are committed.

    retry=False: with Redis down, fail now instead of blocking the request.
    Then `undo` removes what was created for the message (so no run or job
    waits forever for a worker) and QueueUnavailable says so.
    """
    try:
        task.apply_async(args, task_id=task_id, queue=settings.RUN_QUEUE, retry=False)
    except OperationalError as exc:
        undo()
        raise QueueUnavailable(f"The run queue (Redis) is unavailable: {exc}") from exc
