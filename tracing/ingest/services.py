"""Ingestion services: what one API or OTLP request does, in one transaction.

Runs from outside are ``provider="import"`` with ``source`` "api" or "otlp";
their external ids live in ``Run.settings`` (``trace_id``, ``agent``,
``conversation_id``, ``external_id``) and, for idempotency, in ExternalRun.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import models, transaction
from django.utils import timezone

from tracing.ingest.jsonapi import ApiError, Finish, RunRequest
from tracing.ingest.otlp import Span, TraceState, classify, describe, map_spans, needs_rebuild, produces_steps
from tracing.ingest.otlp_labels import labels_from_attributes
from tracing.ingest.writes import (
    Appended,
    append_steps,
    copy_objects,
    copy_spans,
    fast_commit,
    finish_runs,
    locked_external_runs,
    reset_steps,
    save_states,
    stored_span_ids,
    write_new_steps,
)
from tracing.models import ExternalRun, IngestedSpan, Step, get_run_model
from tracing.recorder import add_to_summaries
from tracing.signals import send_run_ended
from tracing.steps import Step as StepRecord
from tracing.summary import RunSummary

# Spans kept per trace. A trace past this is a runaway exporter, not an agent
# run anyone will read; its further spans are refused (OTLP partial success).
MAX_SPANS_PER_TRACE = 100_000
UNKNOWN_MODEL = "unknown"
# What a run from outside does not tell us: unknown, shown as "—", never the
# defaults of a run agentlab launches.
UNKNOWN_SETTINGS = {"temperature": None, "max_steps": None, "max_tokens": None}


def _ns_to_datetime(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC) if ns > 0 else None


def runs_ended(run_ids: Iterable[int]) -> None:
    """Announce runs that just finished (tracing.signals.run_ended): their
    receivers compute the signals and the anchor break. Ingested runs were not
    watched by agentlab's watchdog, so their signals are computed over the
    stored steps."""
    for run_id in run_ids:
        send_run_ended(run_id, recompute_signals=True)


# --- JSON API ---------------------------------------------------------------------


@dataclass
class RunResult:
    run: models.Model  # tracing.models.get_run_model()
    created: bool
    written: int = 0
    duplicates: int = 0

    def as_dict(self) -> dict:
        run = self.run
        return {
            "id": run.pk,
            "external_id": (run.settings or {}).get("external_id"),
            "created": self.created,
            "status": run.status,
            "steps_written": self.written,
            "steps_duplicate": self.duplicates,
            "url": run.get_absolute_url(),
        }


def _finish_fields(finish: Finish, now: datetime) -> dict:
    return {"status": finish.status, "final_answer": finish.final_answer, "reason": finish.reason,
            "success": finish.success, "finished_at": now}


def _new_api_run(owner, req: RunRequest, now: datetime) -> models.Model:
    Run = get_run_model()
    run = Run(
        owner=owner, prompt=req.prompt, provider=Run.Provider.IMPORT, source="api",
        model_name=(req.model or UNKNOWN_MODEL)[:120], settings=req.settings, context=req.context,
        status=Run.Status.RUNNING, started_at=now, **UNKNOWN_SETTINGS, **RunSummary.of(req.steps).columns(),
        tags=req.labels.tags, metadata=req.labels.metadata, session_id=req.labels.session_id,
    )
    if req.finish is not None:
        for name, value in _finish_fields(req.finish, now).items():
            setattr(run, name, value)
    return run


def _create_api_runs(owner, fresh: Sequence[tuple[RunRequest, models.Model]]) -> None:
    """New runs, their external ids and their steps, each kind in one COPY."""
    copy_objects([run for _, run in fresh])
    copy_objects([ExternalRun(owner=owner, source=ExternalRun.Source.API, external_id=req.external_id, run=run)
                  for req, run in fresh if req.external_id])
    write_new_steps([(run.pk, req.steps) for req, run in fresh if req.steps])


def runs_ingest(*, owner, requests: Sequence[RunRequest]) -> list[RunResult]:
    """Create runs (with their steps and outcome when given) in one transaction.

    A run with an ``external_id`` the user already sent is not created again:
    its steps are appended idempotently, so a client can resend the request.
    """
    external_ids = [r.external_id for r in requests if r.external_id]
    if len(set(external_ids)) != len(external_ids):
        raise ApiError("an external_id appears twice in one request")
    now = timezone.now()
    ended: list[int] = []
    results: dict[int, RunResult] = {}
    with transaction.atomic():
        fast_commit()
        known = locked_external_runs(owner=owner, source=ExternalRun.Source.API, external_ids=external_ids)
        fresh = {pos: (req, _new_api_run(owner, req, now)) for pos, req in enumerate(requests)
                 if req.external_id not in known}
        _create_api_runs(owner, list(fresh.values()))
        for pos, (req, run) in fresh.items():
            results[pos] = RunResult(run, True, len(req.steps), 0)
            if req.finish is not None and req.analyse:
                ended.append(run.pk)
        for pos, req in enumerate(requests):
            if pos not in fresh:
                run = get_run_model().objects.select_for_update().get(pk=known[req.external_id].run_id)
                appended = _append_locked(run, req.steps) if req.steps else Appended(0, 0)
                if req.finish is not None and _finish_locked(run, req.finish, now) and req.analyse:
                    ended.append(run.pk)
                results[pos] = RunResult(run, False, appended.written, appended.duplicates)
    runs_ended(ended)
    return [results[pos] for pos in range(len(requests))]


def _owned_api_run(owner, run_id: int) -> models.Model:
    run = get_run_model().objects.select_for_update().filter(pk=run_id, owner=owner).first()
    if run is None:
        # Another user's run looks exactly like a missing one.
        raise ApiError(f"run {run_id} not found", 404)
    if run.source != "api":
        raise ApiError(f"run {run_id} was not created through the API (source {run.source!r})", 409)
    return run


def _append_locked(run: models.Model, steps: Sequence[StepRecord]) -> Appended:
    if run.status not in run.LIVE_STATUSES:
        if steps and _all_stored(run.pk, steps):
            return Appended(0, len(steps))  # a resend of a batch that made it before the finish
        raise ApiError(f"run {run.pk} is finished ({run.status}); steps can no longer be added", 409)
    return append_steps(run.pk, steps)


def _all_stored(run_id: int, steps: Sequence[StepRecord]) -> bool:
    indices = [s.index for s in steps]
    return Step.objects.filter(run_id=run_id, index__in=indices).count() == len(indices)


def run_append(*, owner, run_id: int, steps: Sequence[StepRecord]) -> Appended:
    with transaction.atomic():
        fast_commit()
        return _append_locked(_owned_api_run(owner, run_id), steps)


def _finish_locked(run: models.Model, finish: Finish, now: datetime) -> bool:
    """True when this call finished the run (False: it was already finished the same way)."""
    if run.status not in run.LIVE_STATUSES:
        if (run.status, run.success) != (finish.status, finish.success):
            outcome = {True: "success", False: "failure", None: "no outcome"}[run.success]
            raise ApiError(f"run {run.pk} has already ended: {run.status}, {outcome}", 409)
        return False
    fields = _finish_fields(finish, now)
    type(run).objects.filter(pk=run.pk).update(**fields)
    for name, value in fields.items():
        setattr(run, name, value)
    return True


def run_finish_api(*, owner, run_id: int, finish: Finish) -> models.Model:
    with transaction.atomic():
        run = _owned_api_run(owner, run_id)
        finished = _finish_locked(run, finish, timezone.now())
    if finished:
        runs_ended([run.pk])
        run.refresh_from_db()
    return run


# --- OTLP -------------------------------------------------------------------------


@dataclass
class OtlpResult:
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    without_steps: int = 0
    run_ids: list[int] = field(default_factory=list)
    rejected_reason: str = ""

    def message(self) -> str:
        parts = []
        if self.rejected:
            parts.append(self.rejected_reason)
        if self.without_steps:
            parts.append(
                f"{self.without_steps} span(s) carried no OpenInference or GenAI attributes and gave no steps"
            )
        return "; ".join(parts)


def _new_otlp_run(owner, trace_id: str, spans: Sequence[Span]) -> models.Model:
    info = describe(spans)
    settings = {"trace_id": trace_id}
    for key in ("agent", "conversation_id", "service"):
        if getattr(info, key):
            settings[key] = getattr(info, key)
    labels = labels_from_attributes(span.attrs for span in spans)
    Run = get_run_model()
    return Run(
        owner=owner, prompt=info.prompt, provider=Run.Provider.IMPORT, source="otlp",
        model_name=(info.model or UNKNOWN_MODEL)[:120], settings=settings, status=Run.Status.RUNNING,
        started_at=_ns_to_datetime(info.started_ns) or timezone.now(), **UNKNOWN_SETTINGS,
        tags=labels.tags, metadata=labels.metadata, session_id=labels.session_id,
    )


def _by_trace(spans: Sequence[Span], result: OtlpResult) -> dict[str, dict[str, Span]]:
    """Spans grouped by trace, a span sent twice in the request counted once."""
    by_trace: dict[str, dict[str, Span]] = {}
    for span in spans:
        seen = by_trace.setdefault(span.trace_id, {})
        if span.span_id in seen:
            result.duplicates += 1
        else:
            seen[span.span_id] = span
    return by_trace


def _traces(owner, by_trace: dict[str, dict[str, Span]]) -> tuple[dict[str, ExternalRun], set[str]]:
    """Each trace's ExternalRun (locked), those new to this request created with their runs."""
    known = locked_external_runs(owner=owner, source=ExternalRun.Source.OTLP, external_ids=list(by_trace))
    fresh = [(tid, _new_otlp_run(owner, tid, list(s.values()))) for tid, s in by_trace.items() if tid not in known]
    copy_objects([run for _, run in fresh])
    created = [ExternalRun(owner=owner, source=ExternalRun.Source.OTLP, external_id=tid, run=run) for tid, run in fresh]
    copy_objects(created)
    known.update((ext.external_id, ext) for ext in created)
    return known, {tid for tid, _ in fresh}


def _trace_steps(ext: ExternalRun, new: Sequence[Span], state: TraceState) -> tuple[list[StepRecord], TraceState]:
    """The steps the new spans give, and the trace's state after them."""
    if ext.span_count and needs_rebuild(new, state):
        # A span that belongs before steps already written (a late batch):
        # re-derive the whole trace in order from the stored spans.
        earlier = [Span.from_payload(p) for p in IngestedSpan.objects.filter(trace=ext).values_list("payload", flat=True)]
        reset_steps(ext.run_id)
        state = TraceState()
        return map_spans([*earlier, *new], state), state
    return map_spans(new, state), state


@dataclass
class _Writes:
    """What one OTLP request writes, gathered so each kind is one statement."""

    spans: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    summaries: list = field(default_factory=list)
    states: list = field(default_factory=list)
    finishes: list = field(default_factory=list)
    ended: list[int] = field(default_factory=list)

    def flush(self) -> None:
        copy_spans(self.spans)
        # Indices come from the locked trace state, so they are new: COPY for all.
        write_new_steps(self.steps)
        add_to_summaries(self.summaries)
        save_states(self.states)
        finish_runs(self.finishes)


def _ingest_trace(trace_id: str, ext: ExternalRun, new: list[Span], result: OtlpResult, writes: _Writes) -> None:
    if ext.span_count + len(new) > MAX_SPANS_PER_TRACE:
        result.rejected += len(new)
        result.rejected_reason = f"trace {trace_id} has more than {MAX_SPANS_PER_TRACE} spans"
        return
    result.accepted += len(new)
    result.without_steps += sum(1 for s in new if classify(s) == "other" and not produces_steps(s, "other"))
    state = TraceState.from_dict(ext.state)
    was_finished = state.finished
    steps, state = _trace_steps(ext, new, state)
    writes.steps.append((ext.run_id, steps))
    writes.spans.extend((ext.pk, s.span_id, s.to_payload()) for s in new)
    writes.summaries.append((ext.run_id, RunSummary.of(steps)))
    writes.states.append((ext.pk, state.to_dict(), len(new)))
    result.run_ids.append(ext.run_id)
    finished = _update_run(ext, new, state, was_finished, writes.ended)
    if finished is not None:
        writes.finishes.append(finished)


def otlp_ingest(*, owner, spans: Sequence[Span], analyse: bool = True) -> OtlpResult:
    """Spans -> runs and steps, one transaction; resent spans are skipped.

    ``analyse=False`` (a backfill) leaves finished runs for ``manage.py analyse --source otlp``.
    """
    result = OtlpResult()
    by_trace = _by_trace(spans, result)
    writes = _Writes()
    with transaction.atomic():
        fast_commit()
        known, fresh = _traces(owner, by_trace)
        stored = stored_span_ids([known[tid].pk for tid in by_trace if tid not in fresh])
        for trace_id, trace_spans in by_trace.items():
            ext = known[trace_id]
            new = [s for s in trace_spans.values() if (ext.pk, s.span_id) not in stored]
            result.duplicates += len(trace_spans) - len(new)
            if new:
                _ingest_trace(trace_id, ext, new, result, writes)
        writes.flush()
    if analyse:
        runs_ended(writes.ended)
    return result


def _update_run(ext: ExternalRun, new: Sequence[Span], state: TraceState, was_finished: bool,
                ended: list[int]) -> tuple[int, str, str, datetime] | None:
    """Late run fields (model, prompt) now; the finish, if this batch ended the trace, as a row for finish_runs."""
    run = ext.run
    Run = type(run)
    fields: dict = {}
    if ext.span_count:  # a new run already has what describe() found
        info = describe(new)
        if run.model_name == UNKNOWN_MODEL and info.model:
            fields["model_name"] = info.model[:120]
        # The root agent span, which ends last, names the task better than a
        # model call's prompt taken from an earlier batch.
        if info.prompt and (not run.prompt or (info.prompt_from_root and info.prompt != run.prompt)):
            fields["prompt"] = info.prompt
    if fields:
        Run.objects.filter(pk=run.pk).update(**fields)
    if state.finished and not was_finished:
        ended.append(run.pk)
        roots = [s for s in new if not s.parent_id]
        finished_at = _ns_to_datetime(max((s.end_ns for s in roots), default=0)) or timezone.now()
        # The mapper says how the trace ended ("error" or not); its outcome is unknown.
        status = Run.Status.ERROR if state.outcome == Run.Status.ERROR else Run.Status.FINISHED
        return (run.pk, status, state.final_answer, finished_at)
    if state.finished and run.status not in Run.LIVE_STATUSES:
        ended.append(run.pk)  # a late span changed a finished run's steps
    return None
