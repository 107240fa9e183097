"""Writes that launch runs from the web: launch reruns, fork, stop.

What the worker does with a run is in runs.launch.execution.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial

from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from runs.core.models import Policy, RerunGroup, Run, Task
from runs.core.queue import enqueue
from runs.launch.approval_gate import approval_gate
from runs.launch.lease import lock_for_transaction
from runs.launch.reconcile import run_end_unheld
from runs.launch.selectors import run_history
from runs.launch.tasks import execute_run
from tracing.core.label_limits import Labels
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import Recorder
from tracing.store.signals import send_run_ended

# Steps a counterfactual continuation may run by default (issue 5: "up to N
# more steps, default 5") and at most.
FORK_DEFAULT_TURNS = 5
FORK_MAX_TURNS = 50
# Kinds of step a "what if…" fork may replace with an edited text.
EDITABLE_KINDS = ("observation", "thought")


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
    max_cost: Decimal | None = None
    # Checked by tracing.core.label_limits.clean_labels before the spec is built.
    labels: Labels = field(default_factory=Labels)


class ForkError(ValueError):
    pass


def run_enqueue(*, run: Run, undo: Callable[[], None] | None = None) -> None:
    """Send a committed run to the workers. On a dead broker, `undo` (by
    default: delete the run) and raise runs.core.queue.QueueUnavailable."""
    enqueue(execute_run, run.pk, task_id=run.celery_id, undo=undo or run.delete)


def _forget(runs: Sequence[Run], group: RerunGroup | None) -> None:
    Run.objects.filter(pk__in=[r.pk for r in runs]).delete()
    if group is not None:
        group.delete()


def runs_launch(*, owner, project, spec: RunSpec, reruns: int = 1) -> list[Run]:
    """Create `reruns` queued runs (one group when more than one) and enqueue them.

    Runs are committed before their messages are sent, so a worker never looks
    for a run that is not there yet; if the broker refuses, the runs it did not
    take are deleted, so no run is left queued forever.
    """
    with transaction.atomic():
        group = None
        if reruns > 1:
            title = spec.task.slug if spec.task else spec.prompt[:60]
            group = RerunGroup.objects.create(name=f"{title} × {reruns}", owner=owner, project=project)
        runs = [_new_run(owner=owner, project=project, spec=spec, group=group, offset=i) for i in range(reruns)]
        Run.objects.bulk_create(runs)
    for sent, run in enumerate(runs):
        run_enqueue(run=run, undo=partial(_forget, runs[sent:], group if sent == 0 else None))
    return runs


def _new_run(*, owner, project, spec: RunSpec, group: RerunGroup | None = None, offset: int = 0) -> Run:
    # Reruns differ by seed; an explicit seed makes the group reproducible.
    seed = spec.seed + offset if spec.seed is not None else uuid.uuid4().int % 2**31
    return Run(
        task=spec.task,
        prompt=spec.prompt,
        group=group,
        owner=owner,
        project=project,
        provider=spec.provider,
        model_name=spec.model_name,
        base_url=spec.base_url,
        mode=spec.mode,
        temperature=spec.temperature,
        max_steps=spec.max_steps,
        max_tokens=spec.max_tokens,
        max_cost=spec.max_cost,
        seed=seed,
        settings=spec.settings or {},
        policy=spec.policy,
        celery_id=str(uuid.uuid4()),
        tags=list(spec.labels.tags),
        metadata=dict(spec.labels.metadata),
        session_id=spec.labels.session_id,
    )


def run_build(*, owner, project, spec: RunSpec, group: RerunGroup | None = None, offset: int = 0) -> Run:
    """An unsaved queued run for `spec` (rerun `offset` of it): for features that
    save runs in bulk with rows of their own (evaluations), then enqueue them."""
    return _new_run(owner=owner, project=project, spec=spec, group=group, offset=offset)


def run_create(*, owner, project, spec: RunSpec) -> Run:
    """One queued run without a message: for callers that execute it themselves."""
    run = _new_run(owner=owner, project=project, spec=spec)
    run.save()
    return run


def _check_fork(parent: Run, fork_from: int, turns: int, parent_steps: list[StepRecord]) -> None:
    if parent.is_live:
        raise ForkError("the run is still going; fork it when it has ended")
    if not 1 <= turns <= FORK_MAX_TURNS:
        raise ForkError(f"turns must be between 1 and {FORK_MAX_TURNS}")
    if fork_from < 0:
        raise ForkError("the fork step must be a step index of the run")
    if parent.provider == Run.Provider.IMPORT:
        raise ForkError("imported runs have no model endpoint to continue with")
    after_last = parent_steps[-1].index + 1 if parent_steps else 0
    if fork_from != after_last and not any(s.index == fork_from for s in parent_steps):
        raise ForkError(f"run {parent.pk} has no step {fork_from}")


def _edited_step(parent_steps: list[StepRecord], fork_from: int, edit: dict) -> StepRecord:
    """The parent's step at `fork_from` with the edited text (the original kept in its meta)."""
    original = next((s for s in parent_steps if s.index == fork_from), None)
    if original is None:
        raise ForkError("only an existing step can be edited")
    if original.kind not in EDITABLE_KINDS:
        raise ForkError("only an observation or a thought can be edited")
    text = str(edit.get("text") or "")
    if not text.strip():
        raise ForkError("the edited text is empty")
    meta = {k: v for k, v in original.meta.items() if k not in ("signals", "anchor_score")}
    return StepRecord(index=fork_from, kind=original.kind, text=text, tool=original.tool, args=original.args,
                      meta={**meta, "edited": True, "original_text": original.text[:2000]})


def fork_create(*, parent: Run, fork_from: int, owner=None, policy: Policy | None = None,
                turns: int = FORK_DEFAULT_TURNS, edit: dict | None = None, enqueue: bool = True) -> Run:
    """A run that continues `parent` from step `fork_from` (the steps before it
    are read from the parent). `edit` = {"kind", "text"} replaces the parent's
    step at `fork_from` ("what if the search had returned this?"); without an
    edit the fork resumes just before that step (e.g. without the watchdog's
    intervention). The model turns already in the history count against the
    budget, so the fork's budget is the history's turns plus `turns`."""
    parent_steps = run_history(parent)
    _check_fork(parent, fork_from, turns, parent_steps)
    edited = _edited_step(parent_steps, fork_from, edit) if edit is not None else None
    history_turns = sum(1 for s in parent_steps if s.index < fork_from and s.completion_tokens)
    with transaction.atomic():
        fork = Run.objects.create(
            task=parent.task, prompt=parent.prompt, owner=owner, project_id=parent.project_id, parent=parent,
            fork_from=fork_from,
            provider=parent.provider, model_name=parent.model_name, base_url=parent.base_url, mode=parent.mode,
            temperature=parent.temperature, max_steps=min(1000, history_turns + turns),
            max_tokens=parent.max_tokens + 50_000, max_cost=parent.max_cost, seed=parent.seed,
            settings={**parent.settings, "fork": {"turns": turns, "edited": edited is not None}},
            policy=policy, celery_id=str(uuid.uuid4()),
        )
        if edited is not None:
            Recorder(fork.pk)(edited)
    if enqueue:
        run_enqueue(run=fork)
    return fork


def run_stop(*, run: Run) -> Run:
    """Stop a run: a queued one at once; a running one at its next step, or at
    once when no worker holds it."""
    if Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(
        status=Run.Status.STOPPED, stop_requested=True, stopped_by="user", reason="stopped by user before it started",
        finished_at=timezone.now(),
    ):
        # The claim is conditional on `queued`, so a message that escapes the
        # revoke does nothing; Redis being down must not fail the stop.
        with contextlib.suppress(OperationalError):
            execute_run.app.control.revoke(run.celery_id)
    elif Run.objects.filter(pk=run.pk, status=Run.Status.AWAITING).update(
        status=Run.Status.STOPPED, stop_requested=True, stopped_by="user",
        reason="stopped by user while a call waited for approval", finished_at=timezone.now(),
    ):
        # No worker holds a paused run: it ends now, and its request with it.
        approval_gate().cancel(run.pk)
        send_run_ended(run.pk)
    else:
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(stop_requested=True)
        with transaction.atomic():
            # No worker holds it (killed, or away through a database outage):
            # nothing would ever read the flag, so end it here. A worker that
            # comes back finds it ended and lets it go.
            if lock_for_transaction(run.pk):
                unheld = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).first()
                if unheld is not None:
                    run_end_unheld(unheld, status=Run.Status.STOPPED, reason="stopped by the user", stopped_by="user")
    run.refresh_from_db()
    return run
