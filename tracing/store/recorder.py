"""Streams steps into Postgres as they happen: one statement, one commit per step.

The insert and the run's summary update travel in one statement (a CTE), so a
step and its summary can never disagree, and ON CONFLICT makes a re-delivered
write of the same (run, index) a no-op instead of a duplicate. The step's
search column is left NULL (STEP_SEARCH_INLINE writes it here instead):
tokenising it was half a step's cost, and tracing.store.step_indexer builds
it a few seconds later. What steps add to
their run's summary is one rule, `tracing.core.summary.RunSummary`: applied per step
here, and per batch by `add_to_summaries` (ingestion).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache

from django.conf import settings
from django.db import connection

from tracing.core.steps import Step as StepRecord
from tracing.core.steps import role_of
from tracing.core.stepsearch import step_document
from tracing.core.summary import RunSummary
from tracing.store.run_sink import run_sink

# One step: the insert and what it adds to its run's summary (its RunSummary,
# the UPDATE of the run sink: runs/core/run_rows.py), applied only when the step
# was inserted (not on a re-delivery). This statement runs once per step
# (bench/recording.py).
#
# A step is a trace record, not a payment: its commit need not wait for the
# WAL flush (that wait was most of a step's cost, p95 9 ms -> see
# bench/recording.py). A Postgres crash can lose the last fraction of a second
# of steps but never corrupts or reorders them, and a re-delivered run resumes
# from whatever was stored. `cfg` turns the wait off for this statement's own
# transaction (set_config's `true` is SET LOCAL): in the statement, not before
# it in a BEGIN ... COMMIT, so a step is one round trip to Postgres instead of
# four, which is what a loaded machine makes slow (bench/evaluation.py). The
# UPDATE reads `cfg`, so it is evaluated whenever a step was inserted.
_RECORD_SQL = """
WITH cfg AS (SELECT set_config('synchronous_commit', 'off', true)),
ins AS (
    INSERT INTO tracing_step
        (run_id, index, kind, role, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, created_at,
         search)
    VALUES (%(run)s, %(index)s, %(kind)s, %(role)s, %(text)s, %(tool)s, %(args)s::jsonb, %(meta)s::jsonb, %(prompt)s,
            %(completion)s, %(latency)s, now(), %(search)s::tsvector)
    ON CONFLICT (run_id, index) DO NOTHING
    RETURNING 1
)
{summary}
"""
# The recorder's end of the summary UPDATE the run sink writes.
_RECORD_TAIL = "FROM cfg WHERE id = %(run)s AND EXISTS (SELECT 1 FROM ins)"

# Postgres text cannot hold NUL; tool output sometimes does.
_NUL = "\x00"


def clean_text(text: str | None) -> str:
    if not text:
        return ""
    return text.replace(_NUL, "\ufffd") if _NUL in text else text


def clean_json(value) -> str | None:
    if value is None:
        return None
    # jsonb rejects the \u0000 escape as well as a raw NUL.
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("\\u0000", "\\ufffd") if "\\u0000" in text else text


def clean_value(value):
    """`value` as jsonb will take it, as Python data (NUL escapes replaced)."""
    text = clean_json(value)
    return None if text is None else json.loads(text)


@cache
def _record_sql() -> str:
    return _RECORD_SQL.format(summary=run_sink().summary_sql(_RECORD_TAIL))


def add_to_summaries(deltas: Sequence[tuple[int, RunSummary]]) -> None:
    """Add each batch's summary to its run's columns, all runs in one statement
    (bulk writers: COPY has no RETURNING to do it per step)."""
    run_sink().add_to_summaries(deltas)


def record_step(run_id: int, step: StepRecord) -> None:
    summary = RunSummary.of([step])
    with connection.cursor() as cur:
        cur.execute(_record_sql(), {
            "run": run_id, "index": step.index, "kind": step.kind, "role": role_of(step), "text": clean_text(step.text),
            "tool": clean_text(step.tool or ""), "args": clean_json(step.args), "meta": clean_json(step.meta or {}),
            "prompt": summary.prompt_tokens, "completion": summary.completion_tokens, "latency": summary.latency_ms,
            "interventions": summary.interventions,
            "detector": summary.detectors[0] if summary.detectors else None,
            "tier": summary.tiers[0] if summary.tiers else None,
            "context_tokens": summary.context_tokens[0] if summary.context_tokens else None,
            "truncated": bool(summary.truncated_steps),
            # NULL: the indexer fills it within a tick (tracing.store.step_indexer).
            "search": step_document(clean_text(step.text), step.tool, step.args) if settings.STEP_SEARCH_INLINE else None,
        })


class Recorder:
    """A sink for the agent loop, bound to one run."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    def __call__(self, step: StepRecord) -> None:
        record_step(self.run_id, step)
