"""Writes that touch runs: launch, execute (in the worker), stop, finish."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from runs.agent.loop import Outcome, run_agent
from runs.llm import EndpointNotConfigured, client_for, config_for
from runs.models import Policy, RerunGroup, Run, Task
from runs.toolbox import build_tools
from tracing.analysis import analyse
from tracing.governance import govern_observation
from tracing.models import Step
from tracing.recorder import Recorder
from tracing.signals import send_run_ended
from tracing.steps import Step as StepRecord
from tracing.watchdog import OFF_POLICY, Watchdog

log = logging.getLogger(__name__)

# How often the loop may ask Postgres whether a stop was requested. Checking
# every step costs a query per step; every quarter second is as quick for a
# person pressing Stop.
STOP_CHECK_INTERVAL_S = 0.25


class QueueUnavailable(Exception):
    """The broker (Redis) did not take the run; nothing was left behind."""


@dataclass(frozen=True)
class RunSpec:
    task: Task | None
    prompt: str
    provider: str
    model_name: str
    mode: str
    temperature: float
    max_steps: int
    max_tokens: int
    seed: int | None = None
    base_url: str = ""
    settings: dict | None = None
    policy: Policy | None = None


def runs_launch(*, owner, spec: RunSpec, reruns: int = 1) -> list[Run]:
    """Create `reruns` queued runs (one group when more than one) and enqueue them.

    Runs are committed before their messages are sent, so a worker never looks
    for a run that is not there yet; if the broker refuses, the runs it did not
    take are deleted, so no run is left queued forever.
    """
    from runs.tasks import execute_run

    with transaction.atomic():
        group = None
        if reruns > 1:
            title = spec.task.slug if spec.task else spec.prompt[:60]
            group = RerunGroup.objects.create(name=f"{title} × {reruns}", owner=owner)
        runs = [_new_run(owner=owner, spec=spec, group=group, offset=i) for i in range(reruns)]
        Run.objects.bulk_create(runs)

    sent = 0
    try:
        for run in runs:
            # retry=False: with Redis down, fail now instead of blocking the request.
            execute_run.apply_async((run.pk,), task_id=run.celery_id, queue=settings.RUN_QUEUE, retry=False)
            sent += 1
    except OperationalError as exc:
        Run.objects.filter(pk__in=[r.pk for r in runs[sent:]]).delete()
        if group is not None and sent == 0:
            group.delete()
        raise QueueUnavailable(f"The run queue (Redis) is unavailable: {exc}") from exc
    return runs


def _new_run(*, owner, spec: RunSpec, group: RerunGroup | None = None, offset: int = 0) -> Run:
    # Reruns differ by seed; an explicit seed makes the group reproducible.
    seed = spec.seed + offset if spec.seed is not None else uuid.uuid4().int % 2**31
    return Run(
        task=spec.task,
        prompt=spec.prompt,
        group=group,
        owner=owner,
        provider=spec.provider,
        model_name=spec.model_name,
        base_url=spec.base_url,
        mode=spec.mode,
        temperature=spec.temperature,
        max_steps=spec.max_steps,
        max_tokens=spec.max_tokens,
        seed=seed,
        settings=spec.settings or {},
        policy=spec.policy,
        celery_id=str(uuid.uuid4()),
    )


def run_create(*, owner, spec: RunSpec) -> Run:
    """One queued run without a message: for callers that execute it themselves."""
    run = _new_run(owner=owner, spec=spec)
    run.save()
    return run


def _claim(run_id: int, task_id: str, redelivered: bool) -> bool:
    # Conditional update: of two deliveries of the same run, one proceeds.
    claimed = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
        status=Run.Status.RUNNING, started_at=timezone.now(), celery_id=task_id
    )
    if claimed:
        return True
    # acks_late: a worker died mid-run and Redis handed the message to another.
    # Resume from the stored steps rather than leave the run stuck in `running`.
    return redelivered and Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, celery_id=task_id).exists()


class _StopFlag:
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


def run_history(run: Run) -> list[StepRecord]:
    """The steps the model's context is built from: for a fork, the parent's
    steps before the fork point, then the fork's own (two queries at most)."""
    own = [s.to_record() for s in Step.objects.filter(run_id=run.pk).order_by("index")]
    if run.parent_id is None:
        return own
    inherited = [
        s.to_record()
        for s in Step.objects.filter(run_id=run.parent_id, index__lt=run.fork_from).order_by("index")
    ]
    return inherited + own


class ForkError(ValueError):
    pass


# Steps a counterfactual continuation may run by default (issue 5: "up to N
# more steps, default 5") and at most.
FORK_DEFAULT_TURNS = 5
FORK_MAX_TURNS = 50


def fork_create(*, parent: Run, fork_from: int, owner=None, policy: Policy | None = None,
                turns: int = FORK_DEFAULT_TURNS, edit: dict | None = None, enqueue: bool = True) -> Run:
    """A run that continues `parent` from step `fork_from` (the steps before it
    are read from the parent). `edit` = {"kind", "text"} replaces the parent's
    step at `fork_from` ("what if the search had returned this?"); without an
    edit the fork resumes just before that step (e.g. without the watchdog's
    intervention). The model turns already in the history count against the
    budget, so the fork's budget is the history's turns plus `turns`."""
    if parent.is_live:
        raise ForkError("the run is still going; fork it when it has ended")
    if not 1 <= turns <= FORK_MAX_TURNS:
        raise ForkError(f"turns must be between 1 and {FORK_MAX_TURNS}")
    if fork_from < 0:
        raise ForkError("the fork step must be a step index of the run")
    if parent.provider == Run.Provider.IMPORT:
        raise ForkError("imported runs have no model endpoint to continue with")
    parent_steps = run_history(parent)
    if not any(s.index == fork_from for s in parent_steps) and fork_from != (parent_steps[-1].index + 1 if parent_steps else 0):
        raise ForkError(f"run {parent.pk} has no step {fork_from}")
    inherited = [s for s in parent_steps if s.index < fork_from]
    edited = None
    if edit is not None:
        original = next((s for s in parent_steps if s.index == fork_from), None)
        if original is None:
            raise ForkError("only an existing step can be edited")
        if original.kind not in ("observation", "thought"):
            raise ForkError("only an observation or a thought can be edited")
        text = str(edit.get("text") or "")
        if not text.strip():
            raise ForkError("the edited text is empty")
        edited = StepRecord(index=fork_from, kind=original.kind, text=text, tool=original.tool, args=original.args,
                            meta={**{k: v for k, v in original.meta.items() if k not in ("signals", "anchor_score")},
                                  "edited": True, "original_text": original.text[:2000]})
    history_turns = sum(1 for s in inherited if s.completion_tokens)
    with transaction.atomic():
        fork = Run.objects.create(
            task=parent.task, prompt=parent.prompt, owner=owner, parent=parent, fork_from=fork_from,
            provider=parent.provider, model_name=parent.model_name, base_url=parent.base_url, mode=parent.mode,
            temperature=parent.temperature, max_steps=min(1000, history_turns + turns),
            max_tokens=parent.max_tokens + 50_000, seed=parent.seed,
            settings={**parent.settings, "fork": {"turns": turns, "edited": edited is not None}},
            policy=policy, celery_id=str(uuid.uuid4()),
        )
        if edited is not None:
            Recorder(fork.pk)(edited)
    if enqueue:
        from runs.tasks import execute_run

        try:
            execute_run.apply_async((fork.pk,), task_id=fork.celery_id, queue=settings.RUN_QUEUE, retry=False)
        except OperationalError as exc:
            fork.delete()
            raise QueueUnavailable(f"The run queue (Redis) is unavailable: {exc}") from exc
    return fork


def watchdog_for(run: Run, history: list[StepRecord]) -> Watchdog:
    # No policy = watchdog off; it still computes the signals the timeline shows.
    policy = run.policy.as_policy() if run.policy_id else OFF_POLICY
    watchdog = Watchdog(policy, goal=run.prompt)
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


def run_execute(*, run_id: int, task_id: str = "", redelivered: bool = False, client=None) -> Run | None:
    """Run the agent for a claimed run; called by the Celery task.

    `client` replaces the run's endpoint (the in-process sim for demo data).
    """
    if not _claim(run_id, task_id, redelivered):
        return None
    run = Run.objects.select_related("task", "policy").get(pk=run_id)
    history = run_history(run)
    recorder = Recorder(run_id)
    try:
        outcome = run_agent(
            client=client or client_for(run),
            config=config_for(run),
            prompt=run.prompt,
            tools=build_tools(run),
            sink=recorder,
            should_stop=_StopFlag(run_id),
            watchdog=watchdog_for(run, history),
            history=history,
            prepare_observation=_governed(int(run.settings.get("context_chars", 2000))),
        )
    except EndpointNotConfigured as exc:
        outcome = _error_outcome(run_id, f"model endpoint not configured: {exc}")
    except SoftTimeLimitExceeded:
        outcome = _error_outcome(run_id, "the run hit the worker's time limit")
    except Exception as exc:  # the run must end, never stay `running`
        log.exception("run %s crashed", run_id)
        outcome = _error_outcome(run_id, f"internal error: {type(exc).__name__}: {exc}")
    return run_finish(run_id=run_id, outcome=outcome)


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
    from runs.agent.suite import score

    return score(task.as_suite_dict(), answer)


def run_analyse(run_id: int, *, recompute_signals: bool = False) -> None:
    """Whole-run analysis over the stored steps: the anchor break and the
    per-step anchoring scores (and, when asked, the watchdog's signals again,
    e.g. after a detector changed or for an imported run that has none)."""
    run = Run.objects.select_related("policy").get(pk=run_id)
    rows = {row.index: row for row in Step.objects.filter(run_id=run_id)}
    # A fork is judged on its whole trajectory, the parent's part included.
    records = run_history(run)
    policy = run.policy.as_policy() if run.policy_id else None
    report = analyse(records, task=run.prompt, policy=policy, recompute_signals=recompute_signals)
    changed = []
    for record in records:
        row = rows.get(record.index)
        if row is not None and record.meta != row.meta:
            row.meta = record.meta
            changed.append(row)
    with transaction.atomic():
        Step.objects.bulk_update(changed, ["meta"], batch_size=500)
        Run.objects.filter(pk=run_id).update(
            first_anchor_break=report.first_break,
            anchor_reason=report.reason or "",
            anchor_evidence=report.evidence or {},
        )


def run_finish(*, run_id: int, outcome: Outcome) -> Run:
    run = Run.objects.select_related("task").get(pk=run_id)
    # An infrastructure error says nothing about the agent: leave it unscored.
    success = None if outcome.status == "error" else score_answer(run.task, outcome.final_answer)
    Run.objects.filter(pk=run_id, status=Run.Status.RUNNING).update(
        status=outcome.status,
        final_answer=outcome.final_answer or "",
        reason=outcome.reason or "",
        stopped_by=outcome.stopped_by or "",
        success=success,
        finished_at=timezone.now(),
    )
    send_run_ended(run_id)
    run.refresh_from_db()
    return run


def run_stop(*, run: Run) -> Run:
    """Stop a run: a queued one at once; a running one at its next step."""
    from agentlab.celery import app

    if Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(
        status=Run.Status.STOPPED, stop_requested=True, stopped_by="user", reason="stopped by user before it started",
        finished_at=timezone.now(),
    ):
        # The claim is conditional on `queued`, so a message that escapes the
        # revoke does nothing; Redis being down must not fail the stop.
        with contextlib.suppress(OperationalError):
            app.control.revoke(run.celery_id)
    else:
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(stop_requested=True)
    run.refresh_from_db()
    return run
