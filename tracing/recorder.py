"""Streams steps into Postgres as they happen: one statement, one commit per step.

The insert and the run's summary update travel in one statement (a CTE), so a
step and its summary can never disagree, and ON CONFLICT makes a re-delivered
write of the same (run, index) a no-op instead of a duplicate.
"""

from __future__ import annotations

import json

from django.db import connection, transaction

from tracing.steps import Step as StepRecord

_RECORD_SQL = """
WITH ins AS (
    INSERT INTO tracing_step
        (run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, created_at)
    VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, now())
    ON CONFLICT (run_id, index) DO NOTHING
    RETURNING prompt_tokens, completion_tokens, latency_ms
)
UPDATE runs_run SET
    step_count = step_count + (SELECT count(*) FROM ins),
    prompt_tokens = prompt_tokens + COALESCE((SELECT sum(prompt_tokens) FROM ins), 0),
    completion_tokens = completion_tokens + COALESCE((SELECT sum(completion_tokens) FROM ins), 0),
    latency_ms = latency_ms + COALESCE((SELECT sum(latency_ms) FROM ins), 0),
    intervention_count = intervention_count + (SELECT count(*) FROM ins WHERE %s),
    intervention_detectors = CASE
        WHEN EXISTS (SELECT 1 FROM ins) AND %s::varchar IS NOT NULL AND NOT (%s::varchar = ANY(intervention_detectors))
        THEN array_append(intervention_detectors, %s::varchar) ELSE intervention_detectors END,
    intervention_tiers = CASE
        WHEN EXISTS (SELECT 1 FROM ins) AND %s::varchar IS NOT NULL AND NOT (%s::varchar = ANY(intervention_tiers))
        THEN array_append(intervention_tiers, %s::varchar) ELSE intervention_tiers END,
    context_steps = CASE WHEN %s AND EXISTS (SELECT 1 FROM ins)
        THEN array_append(context_steps, %s::integer) ELSE context_steps END,
    context_tokens = CASE WHEN %s AND EXISTS (SELECT 1 FROM ins)
        THEN array_append(context_tokens, %s::integer) ELSE context_tokens END,
    truncated_steps = CASE WHEN %s AND EXISTS (SELECT 1 FROM ins)
        THEN array_append(truncated_steps, %s::integer) ELSE truncated_steps END
WHERE id = %s
"""

# Postgres text cannot hold NUL; tool output sometimes does.
_NUL = "\x00"


def _clean(text: str | None) -> str:
    if not text:
        return ""
    return text.replace(_NUL, "\ufffd")


def _json(value) -> str | None:
    if value is None:
        return None
    # jsonb rejects the \u0000 escape as well as a raw NUL.
    return json.dumps(value, ensure_ascii=False, default=str).replace("\\u0000", "\\ufffd")


def record_step(run_id: int, step: StepRecord) -> None:
    is_intervention = step.kind == "intervention"
    meta = step.meta or {}
    detector = str(meta.get("detector") or "watchdog")[:40] if is_intervention else None
    tier = str(meta.get("tier") or "")[:10] or None if is_intervention else None
    prompt_tokens = max(0, int(step.prompt_tokens or 0))
    truncated = step.kind == "observation" and bool(meta.get("truncated"))
    with transaction.atomic(), connection.cursor() as cur:
        # A step is a trace record, not a payment: the commit need not wait for
        # the WAL flush (that wait was most of a step's cost, p95 9 ms -> see
        # bench/recording.py). A Postgres crash can lose the last fraction of a
        # second of steps but never corrupts or reorders them, and a re-delivered
        # run resumes from whatever was stored.
        cur.execute("SET LOCAL synchronous_commit TO OFF")
        cur.execute(
            _RECORD_SQL,
            [
                run_id,
                step.index,
                step.kind,
                _clean(step.text),
                _clean(step.tool or ""),
                _json(step.args),
                _json(step.meta or {}),
                max(0, int(step.prompt_tokens or 0)),
                max(0, int(step.completion_tokens or 0)),
                max(0.0, float(step.latency_ms or 0.0)),
                is_intervention,
                detector, detector, detector,
                tier, tier, tier,
                prompt_tokens > 0, step.index,
                prompt_tokens > 0, prompt_tokens,
                truncated, step.index,
                run_id,
            ],
        )


class Recorder:
    """A sink for the agent loop, bound to one run."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id

    def __call__(self, step: StepRecord) -> None:
        record_step(self.run_id, step)
