"""The reconciler's sweep (runs.launch.reconcile) against real Postgres and
Redis: queued runs whose message is gone are sent again; running runs nobody
holds are handed over, ended when resumed too often, stopped when Stop was
pressed. tests/drills/ runs it with real workers that are killed."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from runs.core.models import Run
from runs.launch.lease import Lease
from runs.launch.reconcile import runs_reconcile
from runs.launch.tasks import send_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(settings):
    """A run queue of its own on the shared Redis (nobody consumes it)."""
    settings.RUN_QUEUE = f"agentlab-test-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    yield client
    client.delete(settings.RUN_QUEUE)
    client.close()


def message_ids(client: redis.Redis) -> list[str]:
    return [json.loads(raw)["headers"]["id"] for raw in client.lrange(settings.RUN_QUEUE, 0, -1)]


def aged(run: Run, **fields) -> Run:
    long_ago = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(created_at=long_ago, started_at=long_ago, **fields)
    run.refresh_from_db()
    return run


def test_a_queued_run_whose_message_is_gone_is_sent_again_once(make_run, queue, django_capture_on_commit_callbacks):
    lost = aged(make_run(status="queued", celery_id="lost-1"))
    aged(make_run(status="queued", celery_id="waiting-1"))
    make_run(status="queued", celery_id="just-made")  # within the grace: its message may be on its way
    aged(make_run(status="queued", celery_id="imported", provider="import"))  # no worker executes those
    queue.lpush(settings.RUN_QUEUE, json.dumps({"headers": {"id": "waiting-1"}}))
    with django_capture_on_commit_callbacks(execute=True):
        sweep = runs_reconcile(send=send_run)
    assert sweep.resent == 1
    assert sorted(message_ids(queue)) == ["lost-1", "waiting-1"]
    assert Run.objects.get(pk=lost.pk).status == "queued"  # the claim moves it on, as for any message
    # The message is there now: the next sweep sends nothing.
    assert runs_reconcile(send=send_run).resent == 0


def test_a_running_run_nobody_holds_is_handed_over_under_a_new_id(make_run, queue, django_capture_on_commit_callbacks):
    run = aged(make_run(steps=4, status="running", celery_id="old"), heartbeat_at=timezone.now() - timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert runs_reconcile(send=send_run).resumed == 1
    run.refresh_from_db()
    assert run.status == "running" and run.celery_id not in ("", "old")
    assert message_ids(queue) == [run.celery_id]
    assert (timezone.now() - run.heartbeat_at).total_seconds() < 5  # not handed over again at once
    assert runs_reconcile(send=send_run).resumed == 0


def test_a_run_with_a_fresh_heartbeat_or_a_holder_is_left_alone(make_run, queue):
    fresh = aged(make_run(status="running", celery_id="a"), heartbeat_at=timezone.now())
    held = aged(make_run(status="running", celery_id="b"), heartbeat_at=timezone.now() - timedelta(minutes=1))
    lease = Lease(held.pk, "b")
    assert lease.acquire()  # a worker in a long model call: no heartbeat lately, but its lock is held
    try:
        assert runs_reconcile(send=send_run).resumed == 0
    finally:
        lease.release()
    assert Run.objects.get(pk=fresh.pk).celery_id == "a" and Run.objects.get(pk=held.pk).celery_id == "b"
    assert message_ids(queue) == []


def test_a_run_resumed_too_often_ends_in_error_with_the_reason(make_run, queue, settings,
                                                               django_capture_on_commit_callbacks):
    settings.RUN_MAX_RESUMES = 3
    run = aged(make_run(steps=2, status="running"), heartbeat_at=timezone.now() - timedelta(minutes=1), resumes=3)
    with django_capture_on_commit_callbacks(execute=True):
        assert runs_reconcile(send=send_run).ended == 1
    run.refresh_from_db()
    assert (run.status, run.success) == ("error", None)
    assert run.reason == "the worker executing the run was lost 4 times (resumed 3 times, the limit); not resumed again"
    last = run.steps.order_by("-index").first()
    assert (last.index, last.kind, last.text) == (2, "error", run.reason)
    assert message_ids(queue) == []


def test_a_run_stopped_while_nobody_held_it_ends_stopped(make_run, queue):
    run = aged(make_run(steps=2, status="running", stop_requested=True),
               heartbeat_at=timezone.now() - timedelta(minutes=1))
    assert runs_reconcile(send=send_run).ended == 1
    run.refresh_from_db()
    assert (run.status, run.stopped_by, run.reason) == ("stopped", "user", "stopped by the user")


def test_the_broker_down_does_not_stop_the_sweep_of_running_runs(make_run, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"
    aged(make_run(status="queued"))
    run = aged(make_run(steps=1, status="running", stop_requested=True),
               heartbeat_at=timezone.now() - timedelta(minutes=1))
    sweep = runs_reconcile(send=send_run)
    assert (sweep.resent, sweep.ended) == (0, 1)
    assert Run.objects.get(pk=run.pk).status == "stopped"
