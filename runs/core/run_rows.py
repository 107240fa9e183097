"""Run rows as tracing makes, changes, ends and sums them up: runs' side of
tracing.store.run_sink, handed over in runs.apps.

Every name of a Run column that tracing's writers need is here, beside the
model: a renamed field breaks this module's test (tests/runs/test_run_sink.py),
not a request. The summary statements are SQL for the same reason as before
(one statement per recorded step, one per ingested batch; bench/recording.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from runs.core.models import Run
from tracing.core.summary import RunSummary
from tracing.store.recorder import clean_text, clean_value
from tracing.store.run_sink import NewRun, RunChange, RunEnd

# What an imported run does not say: shown as "—", never a made-up value.
UNKNOWN_SETTINGS = {"temperature": None, "max_steps": None, "max_tokens": None}


def summary_columns(summary: RunSummary) -> dict[str, Any]:
    """The run's summary columns holding exactly these steps (a new run, or a reset one)."""
    return {
        "step_count": summary.steps,
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.completion_tokens,
        "latency_ms": summary.latency_ms,
        "intervention_count": summary.interventions,
        "intervention_detectors": list(summary.detectors),
        "intervention_tiers": list(summary.tiers),
        "context_steps": list(summary.context_steps),
        "context_tokens": list(summary.context_tokens),
        "truncated_steps": list(summary.truncated_steps),
    }


def end_columns(end: RunEnd) -> dict[str, Any]:
    columns = {"status": end.status, "final_answer": end.final_answer, "reason": end.reason,
               "success": end.success, "finished_at": end.finished_at}
    if end.stopped_by:
        columns["stopped_by"] = end.stopped_by
    return columns


# One row per run: (run id, then RunSummary.delta()).
_DELTA_ROW = ("(%s::bigint, %s::int, %s::bigint, %s::bigint, %s::float8, %s::int, %s::varchar[], %s::varchar[], "
              "%s::int[], %s::int[], %s::int[])")

# Adds summaries to their runs. Detectors and tiers are appended in order of
# first appearance, each once; the context-pressure arrays are appended as is.
_SUMMARY_DELTA_SQL = """
UPDATE {table} r SET
    step_count = r.step_count + v.steps,
    prompt_tokens = r.prompt_tokens + v.prompt_tokens,
    completion_tokens = r.completion_tokens + v.completion_tokens,
    latency_ms = r.latency_ms + v.latency_ms,
    intervention_count = r.intervention_count + v.interventions,
    intervention_detectors = r.intervention_detectors || ARRAY(SELECT x FROM unnest(v.detectors)
        WITH ORDINALITY AS t(x, o) WHERE NOT x = ANY(r.intervention_detectors) ORDER BY o)::varchar(40)[],
    intervention_tiers = r.intervention_tiers || ARRAY(SELECT x FROM unnest(v.tiers)
        WITH ORDINALITY AS t(x, o) WHERE NOT x = ANY(r.intervention_tiers) ORDER BY o)::varchar(10)[],
    context_steps = r.context_steps || v.context_steps,
    context_tokens = r.context_tokens || v.context_tokens,
    truncated_steps = r.truncated_steps || v.truncated_steps
FROM (VALUES {rows}) AS v(id, steps, prompt_tokens, completion_tokens, latency_ms, interventions, detectors, tiers,
                          context_steps, context_tokens, truncated_steps)
WHERE r.id = v.id"""

# One step added to its run's summary; the recorder's parameters (tracing.store.recorder.record_step).
# Scalars, not arrays: a step adds at most one detector, tier, context turn and truncation.
_STEP_SUMMARY_SQL = """
UPDATE {table} SET
    step_count = step_count + 1,
    prompt_tokens = prompt_tokens + %(prompt)s,
    completion_tokens = completion_tokens + %(completion)s,
    latency_ms = latency_ms + %(latency)s,
    intervention_count = intervention_count + %(interventions)s,
    intervention_detectors = CASE WHEN %(detector)s::varchar IS NOT NULL
        AND NOT (%(detector)s::varchar = ANY(intervention_detectors))
        THEN array_append(intervention_detectors, %(detector)s::varchar) ELSE intervention_detectors END,
    intervention_tiers = CASE WHEN %(tier)s::varchar IS NOT NULL AND NOT (%(tier)s::varchar = ANY(intervention_tiers))
        THEN array_append(intervention_tiers, %(tier)s::varchar) ELSE intervention_tiers END,
    context_steps = CASE WHEN %(context_tokens)s::integer IS NOT NULL
        THEN array_append(context_steps, %(index)s::integer) ELSE context_steps END,
    context_tokens = CASE WHEN %(context_tokens)s::integer IS NOT NULL
        THEN array_append(context_tokens, %(context_tokens)s::integer) ELSE context_tokens END,
    truncated_steps = CASE WHEN %(truncated)s THEN array_append(truncated_steps, %(index)s::integer)
        ELSE truncated_steps END
{tail}"""


def _table() -> str:
    return connection.ops.quote_name(Run._meta.db_table)


class RunRows:
    """runs' RunSink (tracing.store.run_sink)."""

    model = Run
    live_statuses = tuple(str(s) for s in Run.LIVE_STATUSES)

    def new_run(self, new: NewRun) -> Run:
        run = Run(
            owner=new.owner, project_id=new.project_id, prompt=new.prompt, provider=Run.Provider.IMPORT,
            source=new.source, model_name=new.model_name[:120], settings=new.settings, context=new.context,
            status=Run.Status.RUNNING, started_at=new.started_at, **UNKNOWN_SETTINGS, **summary_columns(new.summary),
            tags=new.labels.tags, metadata=new.labels.metadata, session_id=new.labels.session_id,
        )
        if new.end is not None:
            for name, value in end_columns(new.end).items():
                setattr(run, name, value)
        return run

    def change(self, run: Run, change: RunChange) -> None:
        columns: dict[str, Any] = {}
        if change.model_name is not None:
            columns["model_name"] = clean_text(change.model_name)[:120]
        if change.prompt is not None:
            columns["prompt"] = clean_text(change.prompt)
        if change.settings is not None:
            columns["settings"] = clean_value(change.settings)
        if change.context is not None:
            columns["context"] = clean_value(change.context)
        if change.labels is not None:
            columns.update(tags=change.labels.tags, metadata=change.labels.metadata,
                           session_id=change.labels.session_id)
        if columns:
            Run.objects.filter(pk=run.pk).update(**columns)
            for name, value in columns.items():
                setattr(run, name, value)

    def end(self, run: Run, end: RunEnd) -> None:
        columns = end_columns(end)
        Run.objects.filter(pk=run.pk).update(**columns)
        for name, value in columns.items():
            setattr(run, name, value)

    def end_live(self, ends: Sequence[tuple[int, RunEnd]], *, live_only: bool = True) -> None:
        if not ends:
            return
        values = ", ".join(["(%s::bigint, %s::varchar, %s::text, %s::timestamptz, %s::boolean, %s::text)"] * len(ends))
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE {_table()} r SET status = v.status, final_answer = v.answer, finished_at = v.at, "
                "success = v.success, reason = v.reason "
                f"FROM (VALUES {values}) AS v(id, status, answer, at, success, reason) "
                "WHERE r.id = v.id AND (r.status = ANY(%s) OR NOT %s)",
                [*(v for run_id, e in ends for v in (run_id, e.status, clean_text(e.final_answer), e.finished_at,
                                                      e.success, clean_text(e.reason))),
                 list(self.live_statuses), live_only],
            )

    def summary_sql(self, tail: str) -> str:
        return _STEP_SUMMARY_SQL.format(table=_table(), tail=tail)

    def add_to_summaries(self, deltas: Sequence[tuple[int, RunSummary]]) -> None:
        deltas = [(run_id, d) for run_id, d in deltas if d.steps]
        if not deltas:
            return
        sql = _SUMMARY_DELTA_SQL.format(table=_table(), rows=", ".join([_DELTA_ROW] * len(deltas)))
        with connection.cursor() as cur:
            cur.execute(sql, [v for run_id, d in deltas for v in (run_id, *d.delta())])

    def reset_summary(self, run_id: int) -> None:
        Run.objects.filter(pk=run_id).update(**summary_columns(RunSummary()))
