"""Writes of evaluations: create one with all its runs, measure a run that ended."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial

from django.db import connection, transaction

from runs.agent.strategies import STRATEGIES, WATCHED
from runs.core.models import Policy, Run, Task
from runs.evaluations.models import Evaluation, EvaluationRun
from runs.launch.run_analysis import update_from_values
from runs.launch.services import RunSpec, run_build, run_enqueue
from tracing.core.coverage import answer_coverage
from tracing.core.steps import FAILED_STATUSES, recorded_status
from tracing.store.models import Step

# Tool results that say the action itself was wrong, not the world: the loop's
# answer to an unknown (or, in a baseline's answer turn, unoffered) tool.
INVALID_RESULT_PREFIX = "Unknown tool '"


class EvaluationError(ValueError):
    pass


@dataclass(frozen=True)
class EvaluationSpec:
    tasks: Sequence[Task]
    strategies: Sequence[str]
    reruns: int
    provider: str = Run.Provider.SIM
    model_name: str = "sim"
    base_url: str = ""
    mode: str = Run.Mode.TOOLS
    temperature: float = 0.0
    max_steps: int = 10
    max_tokens: int = 20_000
    max_seconds: int = 120
    max_cost: Decimal | None = None  # None: no cost limit
    policy: Policy | None = None
    seed: int | None = None
    settings: dict | None = None  # e.g. {"sim": {knobs}}
    name: str = ""


def _check(spec: EvaluationSpec) -> None:
    """The rules the form shows as field errors, again for the command line."""
    if not spec.tasks:
        raise EvaluationError("an evaluation needs at least one task")
    unknown = [s for s in spec.strategies if s not in STRATEGIES]
    if unknown:
        raise EvaluationError(f"unknown strategy {', '.join(unknown)}; known: {', '.join(STRATEGIES)}")
    if not spec.strategies:
        raise EvaluationError("an evaluation needs at least one strategy")
    if spec.reruns < 1:
        raise EvaluationError("reruns must be at least 1")
    for name in ("max_steps", "max_tokens", "max_seconds"):
        if getattr(spec, name) < 1:
            raise EvaluationError(f"the budget's {name} must be at least 1")
    # Zero is refused like zero steps: a run that may spend nothing cannot take a turn.
    if spec.max_cost is not None and not (Decimal(spec.max_cost).is_finite() and spec.max_cost > 0):
        raise EvaluationError("the budget's max_cost must be more than 0 (leave it out for no cost limit)")


def _forget(run_ids: Sequence[int], evaluation: Evaluation | None) -> None:
    Run.objects.filter(pk__in=run_ids).delete()
    if evaluation is not None:
        evaluation.delete()


def evaluation_create(*, owner, project, spec: EvaluationSpec) -> Evaluation:
    """The evaluation, its runs (task × strategy × rerun) and their links in one
    transaction, then every run sent to the workers. Rerun r of a task has the
    same seed under every strategy, so strategies are compared on the same
    draws of the simulated model's knobs. On a dead broker the runs not sent
    are deleted (all of it when none was sent) and QueueUnavailable is raised."""
    _check(spec)
    base_seed = spec.seed if spec.seed is not None else uuid.uuid4().int % 2**30
    strategies = list(dict.fromkeys(spec.strategies))
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            name=spec.name, project=project, owner=owner, strategies=strategies, reruns=spec.reruns, provider=spec.provider,
            model_name=spec.model_name, base_url=spec.base_url, mode=spec.mode, temperature=spec.temperature, max_steps=spec.max_steps,
            max_tokens=spec.max_tokens, max_seconds=spec.max_seconds, max_cost=spec.max_cost, policy=spec.policy, seed=base_seed,
            settings=spec.settings or {},
        )
        evaluation.tasks.set(spec.tasks)
        runs, links = [], []
        for task in spec.tasks:
            for strategy in strategies:
                run_spec = RunSpec(
                    task=task, prompt=task.prompt, provider=spec.provider, model_name=spec.model_name,
                    base_url=spec.base_url,
                    mode=spec.mode, temperature=spec.temperature, max_steps=spec.max_steps,
                    max_tokens=spec.max_tokens, max_cost=spec.max_cost, seed=base_seed,
                    settings={**(spec.settings or {}), "strategy": strategy, "max_seconds": spec.max_seconds,
                              "evaluation": evaluation.pk},
                    policy=spec.policy if strategy in WATCHED else None,
                )
                for rerun in range(spec.reruns):
                    runs.append(run_build(owner=owner, project=project, spec=run_spec, offset=rerun))
                    links.append((strategy, rerun))
        Run.objects.bulk_create(runs)
        EvaluationRun.objects.bulk_create(
            EvaluationRun(evaluation=evaluation, run=run, strategy=strategy, rerun=rerun)
            for run, (strategy, rerun) in zip(runs, links, strict=True)
        )
    ids = [run.pk for run in runs]
    for sent, run in enumerate(runs):
        run_enqueue(run=run, undo=partial(_forget, ids[sent:], evaluation if sent == 0 else None))
    return evaluation


def measure(steps: Sequence[Step], final_answer: str) -> dict:
    """What an evaluation counts in one ended run's steps."""
    actions = invalid = tool_errors = 0
    observations = []
    for step in steps:
        meta = step.meta or {}
        # The model's own moves: its tool calls and its answer (a baseline's
        # only move may be the answer); not the script's calls, not a fallback.
        if (step.kind == "action" and not meta.get("scripted")) or (step.kind == "final" and not meta.get("fallback")):
            actions += 1
        elif step.kind == "error" and meta.get("source") == "parse":
            invalid += 1
        elif step.kind == "observation":
            if (step.text or "").startswith(INVALID_RESULT_PREFIX):
                invalid += 1
            elif recorded_status(meta) in FAILED_STATUSES:
                tool_errors += 1
            observations.append(step.text)
    return {"actions": actions, "invalid_actions": invalid, "tool_errors": tool_errors,
            "coverage": answer_coverage(final_answer, observations)}


def evaluation_runs_measure(run_ids: Sequence[int]) -> int:
    """Measure the ended runs among `run_ids` that belong to an evaluation (called
    when a run ends, runs.lifecycle). Returns how many were measured."""
    entries = list(EvaluationRun.objects.filter(run_id__in=run_ids).exclude(run__status__in=Run.LIVE_STATUSES)
                   .values_list("pk", "run_id", "run__final_answer"))
    if not entries:
        return 0
    by_run: dict[int, list[Step]] = {run_id: [] for _, run_id, _ in entries}
    for step in Step.objects.filter(run_id__in=list(by_run)).only("run_id", "kind", "text", "meta").order_by(
            "run_id", "index"):
        by_run[step.run_id].append(step)
    rows = []
    for pk, run_id, final_answer in entries:
        m = measure(by_run[run_id], final_answer)
        rows.append((pk, True, m["coverage"], m["actions"], m["invalid_actions"], m["tool_errors"]))
    # One UPDATE ... FROM (VALUES ...): bulk_update's CASE per column cost more
    # to build than the measuring itself, on every run's end.
    update_from_values(connection.ops.quote_name(EvaluationRun._meta.db_table),
                       [("measured", "boolean"), ("coverage", "float8"), ("actions", "int"),
                        ("invalid_actions", "int"), ("tool_errors", "int")], rows)
    return len(entries)
