"""What a worker does with a run: claim it, run the agent, finish it.

Called by the Celery task (runs.launch.tasks) and, for demo data, in process.
A run that ends is announced with tracing.store.signals.run_ended; its analysis and
review items follow from there (runs.lifecycle).
"""

from __future__ import annotations

import logging
import time
from functools import partial

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from runs.agent.loop import AWAITING_APPROVAL, Outcome, run_agent
from runs.agent.strategies import BASELINES, run_strategy
from runs.agent.suite import score
from runs.core.endpoints import EndpointNotConfigured, client_for, config_for
from runs.core.models import Run, Task
from runs.launch.approval_gate import ApprovalGate, approval_gate
from runs.launch.lease import DatabaseGone, Lease, LeaseLost
from runs.launch.selectors import run_history
from runs.launch.toolbox import build_tools
from tracing.core.governance import govern_observation
from tracing.core.steps import Step as StepRecord
from tracing.core.watchdog import OFF_POLICY, Watchdog
from tracing.store.call_store import CallRecorder
from tracing.store.models import Step
from tracing.store.recorder import Recorder
from tracing.store.signals import send_run_ended

log = logging.getLogger(__name__)

# How often the loop may ask Postgres whether a stop was requested. Checking
# every step costs a query per step; every quarter second is as quick for a
# person pressing Stop.
STOP_CHECK_INTERVAL_S = 0.25


def run_claim(*, run_id: int, task_id: str) -> bool:
    """True when this delivery of the run's message may execute it. The caller
    holds the run's lease (runs.launch.lease), so no one else is executing it."""
    now = timezone.now()
    # Conditional update: of two deliveries of the same run, one proceeds.
    if Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
        status=Run.Status.RUNNING, started_at=now, celery_id=task_id, heartbeat_at=now
    ):
        return True
    # Running under this message's id, and nobody holds it: its worker died
    # (acks_late redelivered the message) or the reconciler handed it over
    # with a new id. Resume from the stored steps. An older message of the run
    # (another id) or a run that ended does nothing.
    return bool(Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, celery_id=task_id).update(
        heartbeat_at=now, resumes=F("resumes") + 1
    ))


class StopFlag:
    """The loop's `should_stop`: has someone pressed Stop? (checked at most every STOP_CHECK_INTERVAL_S)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.checked_at = 0.0
        self.stop = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if not self.stop and now - self.checked_at >= STOP_CHECK_INTERVAL_S:
            self.checked_at = now
            self.stop = Run.objects.filter(pk=self.run_id, stop_requested=True).exists()
        return self.stop


def watchdog_for(run: Run, history: list[StepRecord]) -> Watchdog:
    # No policy = watchdog off; it still computes the signals the timeline shows.
    policy = run.policy.as_policy() if run.policy_id else OFF_POLICY
    watchdog = Watchdog(policy, goal=run.goal, context=run.context)
    # A resumed run: bring the detectors' state up to where the run stopped.
    for step in history:
        watchdog.observe(step)
    return watchdog


def _governed(max_chars: int):
    def prepare(tool: str, result) -> tuple[str, dict]:
        text, meta = govern_observation(tool, result.text, result.status, max_chars=max_chars,
                                        source=str((result.meta or {}).get("docs", "")))
        return text, {**(result.meta or {}), **meta}

    return prepare


def run_execute(*, run_id: int, task_id: str = "", client=None, approvals: ApprovalGate | None = None) -> Run | None:
    """Run the agent for a claimed run; called by the Celery task.

    `client` replaces the run's endpoint (the in-process sim for demo data);
    `approvals` the gate runs.approvals handed over (runs.launch.approval_gate).
    Returns None when this delivery does not execute the run: another worker
    holds it, it ended, or the worker let it go (the database stayed away, or
    the reconciler handed the run to another worker meanwhile).
    """
    lease = Lease(run_id, task_id)
    if not lease.acquire():
        return None
    try:
        if not run_claim(run_id=run_id, task_id=task_id):
            return None
        lease.start_heartbeat()
        return _execute(run_id, lease, client, approvals or approval_gate())
    except (LeaseLost, DatabaseGone) as exc:
        # Nothing more is written: a step now could race the run's new holder,
        # and a dead database cannot take it. The reconciler takes it up.
        log.warning("run %s left to the reconciler: %s", run_id, exc)
        return None
    finally:
        lease.release()


def _execute(run_id: int, lease: Lease, client, approvals: ApprovalGate) -> Run:
    durable = lease.durable
    run = durable(Run.objects.select_related("task", "policy").get)(pk=run_id)
    history = durable(run_history)(run)
    try:
        # A run of an evaluation may be a baseline (runs.agent.strategies); any other is ReAct.
        strategy = run.settings.get("strategy")
        agent = partial(run_strategy, strategy) if strategy in BASELINES else run_agent
        outcome = agent(
            client=client or client_for(run),
            config=config_for(run),
            prompt=run.prompt,
            tools=build_tools(run, guard=durable),
            sink=durable(Recorder(run_id)),
            should_stop=durable(StopFlag(run_id)),
            watchdog=watchdog_for(run, history),
            history=history,
            prepare_observation=_governed(int(run.settings.get("context_chars", 2000))),
            approval=durable(approvals.lookup(run_id)),
            call_sink=durable(CallRecorder(run_id)),
        )
    except (LeaseLost, DatabaseGone):
        raise
    except EndpointNotConfigured as exc:
        outcome = durable(_error_outcome)(run_id, f"model endpoint not configured: {exc}")
    except SoftTimeLimitExceeded:
        outcome = durable(_error_outcome)(run_id, "the run hit the worker's time limit")
    except Exception as exc:  # the run must end, never stay `running`
        log.exception("run %s crashed", run_id)
        outcome = durable(_error_outcome)(run_id, f"internal error: {type(exc).__name__}: {exc}")
    return durable(run_finish)(run_id=run_id, outcome=outcome, approvals=approvals)


def _next_index(run_id: int) -> int:
    last = Step.objects.filter(run_id=run_id).order_by("-index").values_list("index", flat=True).first()
    return 0 if last is None else last + 1


def _error_outcome(run_id: int, reason: str) -> Outcome:
    Recorder(run_id)(StepRecord(index=_next_index(run_id), kind="error", text=reason, meta={"reason": reason}))
    return Outcome(status="error", final_answer=None, reason=reason, stopped_by=None)


def score_answer(task: Task | None, answer: str | None) -> bool | None:
    if task is None or not task.gold_answer:
        return None  # nothing to score against
    if not answer:
        return False  # a run that ended without an answer did not succeed
    return score(task.as_suite_dict(), answer)


def run_status(outcome: Outcome) -> str:
    """The run's status for how the loop ended: an end of the agent's own (an
    answer, a budget, a watchdog stop) is `finished`; a person's Stop is
    `stopped`; an infrastructure failure `error`. Whether it was right is the
    outcome (`success`), not the status."""
    if outcome.status == "error":
        return Run.Status.ERROR
    if outcome.status == AWAITING_APPROVAL:
        return Run.Status.AWAITING
    if outcome.stopped_by == "user":
        return Run.Status.STOPPED
    return Run.Status.FINISHED


def run_finish(*, run_id: int, outcome: Outcome, approvals: ApprovalGate | None = None) -> Run:
    run = Run.objects.select_related("task").get(pk=run_id)
    status = run_status(outcome)
    if status == Run.Status.AWAITING:
        # Paused, not ended: no worker holds it while a person decides.
        with transaction.atomic():
            Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(status=status, reason=outcome.reason)
            (approvals or approval_gate()).open(run_id)
        run.refresh_from_db()
        return run
    # An infrastructure error or a person's Stop says nothing about the agent:
    # leave it unscored, never "wrong".
    success = None if status != Run.Status.FINISHED else score_answer(run.task, outcome.final_answer)
    Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
        status=status,
        final_answer=outcome.final_answer or "",
        reason=outcome.reason or "",
        stopped_by=outcome.stopped_by or "",
        success=success,
        finished_at=timezone.now(),
    )
    send_run_ended(run_id)
    run.refresh_from_db()
    return run
