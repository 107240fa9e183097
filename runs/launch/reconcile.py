"""The reconciler: Postgres says which runs are owed work; the broker and the
workers are made to agree with it.

- A `queued` run older than RUN_QUEUED_GRACE_S whose message is not in the run
  queue (Redis restarted and kept nothing, the message went to a worker that
  died before claiming it) is sent again under the same id. A duplicate is
  harmless: the claim is conditional on `queued`.
- A `running` run whose lock is free and whose heartbeat is older than
  RUN_STALE_S (its worker was killed, or gave up on a database outage) is
  handed over under a new message id and resumed from its stored steps by
  whichever worker takes the message; after RUN_MAX_RESUMES resumes it ends
  `error` instead, and a run whose Stop was pressed ends `stopped`.

It runs every RECONCILE_INTERVAL_S on a thread of every worker
(runs.launch.sweeper; at once when a worker starts) and from Celery beat on
the control queue, one sweep at a time under an advisory lock
(runs.launch.sweeper.sweep_locked): no single process is the reconciler.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import redis
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from runs.core.models import Run
from runs.core.queue import QueueUnavailable
from runs.launch.lease import lock_for_transaction
from tracing.core.steps import Step as StepRecord
from tracing.store.models import Step
from tracing.store.recorder import Recorder
from tracing.store.signals import send_run_ended

log = logging.getLogger(__name__)

# Runs agentlab's workers execute (imported and ingested runs have no worker).
EXECUTED = (Run.Provider.SIM, Run.Provider.LOCAL, Run.Provider.OPENAI)


@dataclass
class Sweep:
    resent: int = 0
    resumed: int = 0
    ended: int = 0


def queued_message_ids() -> set[str]:
    """The task ids of the messages waiting in the run queue (kombu's Redis
    transport keeps a queue as a list of JSON messages; the id is a header)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5, socket_connect_timeout=2)
    try:
        ids = set()
        for raw in client.lrange(settings.RUN_QUEUE, 0, -1):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                ids.add(json.loads(raw)["headers"]["id"])
        return ids
    finally:
        client.close()


# Sends a run's message under the given id (runs.launch.tasks.send_run): passed
# in, as the task module imports this one.
Send = Callable[[int, str], None]


def _send(send: Send, run_id: int, task_id: str) -> bool:
    try:
        send(run_id, task_id)
    except QueueUnavailable as exc:
        log.warning("run %s not sent: %s", run_id, exc)
        return False
    return True


def _resend_queued(now, send: Send) -> int:
    waiting = list(Run.objects.filter(status=Run.Status.QUEUED, provider__in=EXECUTED,
                                      created_at__lt=now - timedelta(seconds=settings.RUN_QUEUED_GRACE_S))
                   .values_list("pk", "celery_id"))
    if not waiting:
        return 0
    live = queued_message_ids()
    return sum(_send(send, pk, celery_id) for pk, celery_id in waiting if celery_id not in live)


def run_end_unheld(run: Run, *, status: str, reason: str, stopped_by: str = "") -> None:
    """End a running run no worker holds, now. The caller holds the run's lock
    (lock_for_transaction, in the same transaction), so no worker writes a step
    meanwhile; one that comes back later finds the run ended and drops it."""
    last = Step.objects.filter(run_id=run.pk).order_by("-index").values_list("index", flat=True).first()
    index = 0 if last is None else last + 1
    if status == Run.Status.STOPPED:
        step = StepRecord(index=index, kind="intervention", text="Stopped by the user.",
                          meta={"detector": "user", "tier": "stop", "evidence": {"worker": "none held the run"}})
    else:
        step = StepRecord(index=index, kind="error", text=reason, meta={"source": "worker", "reason": reason})
    Recorder(run.pk)(step)
    Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        status=status, reason=reason, stopped_by=stopped_by, success=None, finished_at=timezone.now()
    )
    run_id = run.pk
    transaction.on_commit(lambda: send_run_ended(run_id))


def _take_over(run_id: int, stale_before, send: Send) -> str:
    """Resume or end one running run if nobody holds it: "resumed", "ended" or ""."""
    with transaction.atomic():
        if not lock_for_transaction(run_id):
            return ""  # a worker holds it (a long model call, say): leave it
        run = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).first()
        if run is None or (run.heartbeat_at or run.started_at or run.created_at) >= stale_before:
            return ""
        if run.stop_requested:
            run_end_unheld(run, status=Run.Status.STOPPED, reason="stopped by the user", stopped_by="user")
            return "ended"
        if run.resumes >= settings.RUN_MAX_RESUMES:
            run_end_unheld(run, status=Run.Status.ERROR,
                           reason=f"the worker executing the run was lost {run.resumes + 1} times "
                                  f"(resumed {run.resumes} times, the limit); not resumed again")
            return "ended"
        # A new message id: the old message, should Redis still redeliver it,
        # no longer claims the run. The heartbeat now: not handed over again
        # before a worker has had RUN_STALE_S to take the message.
        task_id = str(uuid.uuid4())
        Run.objects.filter(pk=run_id).update(celery_id=task_id, heartbeat_at=timezone.now())
        transaction.on_commit(lambda: _send(send, run_id, task_id))
    log.warning("run %s: no worker held it since %s; resuming it from its stored steps", run_id,
                run.heartbeat_at or run.started_at)
    return "resumed"


def runs_reconcile(*, send: Send) -> Sweep:
    """One sweep; `send(run_id, task_id)` sends a run's message (raising
    runs.core.queue.QueueUnavailable when the broker is down)."""
    now = timezone.now()
    sweep = Sweep()
    try:
        sweep.resent = _resend_queued(now, send)
    except redis.RedisError as exc:
        log.warning("queued runs not checked: the broker is unavailable (%s)", exc)
    stale_before = now - timedelta(seconds=settings.RUN_STALE_S)
    orphans = Run.objects.filter(status=Run.Status.RUNNING, provider__in=EXECUTED).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, started_at__lt=stale_before)
    ).values_list("pk", flat=True)
    for run_id in list(orphans):
        done = _take_over(run_id, stale_before, send)
        if done == "resumed":
            sweep.resumed += 1
        elif done == "ended":
            sweep.ended += 1
    if sweep.resent or sweep.resumed or sweep.ended:
        log.warning("reconciled runs: %s", sweep)
    return sweep
