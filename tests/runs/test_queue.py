"""Sending work to the workers with cleanup when the broker is down (runs.core.queue)."""

from __future__ import annotations

import pytest
from kombu.exceptions import OperationalError

from runs.core.queue import QueueUnavailable, enqueue


class FakeTask:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.sent: list[tuple] = []

    def apply_async(self, args, **options):
        if self.error is not None:
            raise self.error
        self.sent.append((args, options))


def test_it_sends_to_the_run_queue_without_retrying(settings):
    task, undone = FakeTask(), []
    enqueue(task, 7, task_id="t-7", undo=lambda: undone.append(True))
    assert task.sent == [((7,), {"task_id": "t-7", "queue": settings.RUN_QUEUE, "retry": False})]
    assert not undone


def test_a_dead_broker_undoes_and_says_so():
    task, undone = FakeTask(OperationalError("Connection refused")), []
    with pytest.raises(QueueUnavailable, match="The run queue \\(Redis\\) is unavailable: Connection refused"):
        enqueue(task, 7, undo=lambda: undone.append(True))
    assert undone == [True]
