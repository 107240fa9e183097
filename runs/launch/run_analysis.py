"""Stored runs judged as a whole: the anchor break, findings and per-step scores
(and, when asked, the watchdog's signals again), written back into the runs.

One run when it ends (runs.lifecycle), or batches of runs for `manage.py
analyse`: a batch reads its steps in one query and writes them back in a few
statements, so re-analysing history costs the detectors' time, not round trips.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, transaction

from runs.breaks.selectors import demoted_patterns
from runs.core.models import Policy, Run
from runs.core.run_rows import summary_columns
from runs.launch.selectors import run_history
from tracing.core.analysis import analyse
from tracing.core.anchoring import AnchorReport
from tracing.core.attribution import attribute
from tracing.core.steps import Step as StepRecord
from tracing.core.summary import RunSummary
from tracing.core.watchdog import DEFAULT_POLICY
from tracing.core.watchdog import Policy as WatchdogPolicy
from tracing.store.models import Step
from tracing.store.recorder import clean_json, clean_value

# Rows per UPDATE ... FROM (VALUES ...) statement: bounds one statement's
# parameters (Postgres allows 65,535) and the size of its text.
WRITE_ROWS = 1000


def report_columns(report: AnchorReport) -> dict[str, Any]:
    """The run's anchoring columns for a report, safe for jsonb (quoted step
    text may hold a NUL, which Postgres refuses)."""
    return {
        "first_anchor_break": report.first_break,
        "anchor_reason": (report.reason or "").replace("\x00", "\ufffd"),
        "anchor_evidence": clean_value(report.evidence or {}),
        "anchor_findings": clean_value(report.to_dict()["anchor_findings"]),
    }


def attribution_column(records: Sequence[StepRecord], *, goal: str, status: str, success: bool | None,
                       report: AnchorReport, context: dict | None) -> dict[str, Any]:
    """The run's first-guess failure layer as stored ({} unless the agent failed).

    Only a finished run with a wrong answer is the agent's failure: a person's
    Stop and an error (the model or a worker down) are not, and neither is a
    run nobody scored."""
    if status != Run.Status.FINISHED or success is not False:
        return {}
    found = attribute(records, goal, outcome=False, analysis=report, context=context or None)
    return clean_value(found.to_dict()) if found is not None else {}


def _records(runs: Sequence[Run]) -> dict[int, tuple[list[StepRecord], dict[int, Step]]]:
    """Per run: its trajectory as records, and its own stored steps by index.

    One query for all the runs' own steps; a fork's inherited steps are its
    parent's, read apart (forks are few)."""
    own: dict[int, list[Step]] = defaultdict(list)
    for step in Step.objects.filter(run_id__in=[run.pk for run in runs]).order_by("run_id", "index").iterator(2000):
        own[step.run_id].append(step)
    out = {}
    for run in runs:
        stored = {step.index: step for step in own[run.pk]}
        records = run_history(run) if run.parent_id is not None else [step.to_record() for step in own[run.pk]]
        out[run.pk] = (records, stored)
    return out


def update_from_values(table: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
    """UPDATE table SET col = v.col ... FROM (VALUES (id, ...)) in statements of WRITE_ROWS rows."""
    casts = ", ".join(["%s::bigint", *(f"%s::{cast}" for _, cast in columns)])
    names = ", ".join(["id", *(name for name, _ in columns)])
    sets = ", ".join(f"{name} = v.{name}" for name, _ in columns)
    with connection.cursor() as cur:
        for start in range(0, len(rows), WRITE_ROWS):
            part = rows[start:start + WRITE_ROWS]
            values = ", ".join([f"({casts})"] * len(part))
            cur.execute(f"UPDATE {table} t SET {sets} FROM (VALUES {values}) AS v({names}) WHERE t.id = v.id",
                        [value for row in part for value in row])


def default_policy(project_id: int | None) -> WatchdogPolicy:
    """The policy a new run of the project gets (the latest version of its "default"), else the built-in one."""
    row = Policy.objects.for_project(project_id).latest_versions().filter(name="default").first()
    return row.as_policy() if row is not None else DEFAULT_POLICY


def runs_analyse(run_ids: Sequence[int], *, recompute_signals: bool = False,
                 demoted: Mapping[int | None, frozenset[str]] | None = None) -> int:
    """Whole-run analysis over the stored steps of these runs (when one ends, after
    a detector changed, or for ingested runs that have no signals), judged with
    each run's goal, context and policy, and the patterns its project demoted
    (``demoted`` per project id; read from runs.breaks when not given).
    Returns the number of runs analysed."""
    runs = list(Run.objects.filter(pk__in=run_ids).select_related("policy").order_by("pk"))
    if demoted is None:
        demoted = demoted_patterns({run.project_id for run in runs})
    trajectories = _records(runs)
    step_rows: list[tuple[int, str]] = []
    run_rows: list[tuple] = []
    summary_rows: list[tuple] = []
    defaults: dict[int | None, WatchdogPolicy] = {}  # per project, read once
    for run in runs:
        records, stored = trajectories[run.pk]
        policy = run.policy.as_policy() if run.policy_id else None
        # A run the live watchdog did not watch (ingested, imported) gets its
        # policy, or the default one, replayed: where it would have intervened
        # is marked and counted like an intervention.
        watched = any(r.kind == "intervention" for r in records)
        replay_policy = None
        if recompute_signals and not watched and run.parent_id is None:
            if policy is None and run.project_id not in defaults:
                defaults[run.project_id] = default_policy(run.project_id)
            replay_policy = policy or defaults[run.project_id]
        # A fork is judged on its whole trajectory, the parent's part included.
        report = analyse(records, task=run.goal, context=run.context or None, policy=policy,
                         recompute_signals=recompute_signals, replay_policy=replay_policy,
                         demoted=demoted.get(run.project_id, frozenset()))
        if replay_policy is not None:
            columns = summary_columns(RunSummary.of(records))
            summary_rows.append((run.pk, columns["intervention_count"], columns["intervention_detectors"],
                                 columns["intervention_tiers"]))
        for record in records:
            row = stored.get(record.index)
            if row is not None and record.meta != row.meta:
                step_rows.append((row.pk, clean_json(record.meta)))
        cols = report_columns(report)
        guess = attribution_column(records, goal=run.goal, status=run.status, success=run.success, report=report,
                                   context=run.context)
        run_rows.append((run.pk, cols["first_anchor_break"], cols["anchor_reason"], clean_json(cols["anchor_evidence"]),
                         clean_json(cols["anchor_findings"]), clean_json(guess)))
    with transaction.atomic():
        update_from_values(connection.ops.quote_name(Step._meta.db_table), [("meta", "jsonb")], step_rows)
        update_from_values(connection.ops.quote_name(Run._meta.db_table),
                            [("first_anchor_break", "int"), ("anchor_reason", "text"), ("anchor_evidence", "jsonb"),
                             ("anchor_findings", "jsonb"), ("attribution", "jsonb")], run_rows)
        update_from_values(connection.ops.quote_name(Run._meta.db_table),
                            [("intervention_count", "int"), ("intervention_detectors", "varchar(40)[]"),
                             ("intervention_tiers", "varchar(10)[]")], summary_rows)
    return len(runs)


def run_analyse(run_id: int, *, recompute_signals: bool = False) -> None:
    """One run's whole-run analysis (runs_analyse of one)."""
    runs_analyse([run_id], recompute_signals=recompute_signals)
