"""Ingestion services: what one API or OTLP request does, in one transaction.

Runs from outside are ``provider="import"`` with ``source`` "api" or "otlp";
their external ids live in ``Run.settings`` (``trace_id``, ``agent``,
``conversation_id``, ``external_id``) and, for idempotency, in ExternalRun.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from celery import current_app
from django.conf import settings as django_settings
from django.db import models, transaction
from django.utils import timezone

from tracing.core.formats.genai_events import event_key
from tracing.core.formats.jsonapi import ApiError, Finish, RunRequest
from tracing.core.formats.otlp import (
    Span,
    TraceState,
    classify,
    describe,
    end_trace,
    has_root,
    map_trace,
    needs_rebuild,
    order_key,
    produces_steps,
)
from tracing.core.formats.otlp_labels import labels_from_attributes, labels_merged, span_label_sources
from tracing.core.formats.otlp_logs import LogBatch
from tracing.core.label_limits import Labels
from tracing.core.model_calls import ModelCallRecord
from tracing.core.steps import Step as StepRecord
from tracing.core.summary import RunSummary
from tracing.store.call_store import calls_record
from tracing.store.guard import (
    NOT_GUARDED,
    GuardAnswer,
    guard_observe,
    guard_of,
    guard_start,
    guard_stop_end,
    stop_reason,
)
from tracing.store.ingest.writes import (
    Appended,
    append_steps,
    copy_objects,
    copy_spans,
    fast_commit,
    finish_runs,
    locked_external_runs,
    promote_finals,
    reset_steps,
    save_states,
    stored_span_ids,
    write_new_steps,
)
from tracing.store.models import ExternalRun, IngestedSpan, PendingEvent, Step
from tracing.store.recorder import add_to_summaries, clean_text, clean_value
from tracing.store.run_sink import ERROR, FINISHED, NewRun, RunChange, RunEnd, run_sink
from tracing.store.signals import send_run_ended

# Spans kept per trace. A trace past this is a runaway exporter, not an agent
# run anyone will read; its further spans are refused (OTLP partial success).
MAX_SPANS_PER_TRACE = 100_000
UNKNOWN_MODEL = "unknown"
ANALYSE_TASK = "tracing.store.tasks.analyse_ingested"
logger = logging.getLogger(__name__)


def _ns_to_datetime(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC) if ns > 0 else None


def runs_ended(run_ids: Iterable[int]) -> None:
    """Announce runs that just finished (tracing.store.signals.run_ended): their
    receivers compute the signals and the anchor break. Ingested runs were not
    watched by agentlab's watchdog, so their signals are computed over the
    stored steps."""
    for run_id in run_ids:
        send_run_ended(run_id, recompute_signals=True)


# --- JSON API ---------------------------------------------------------------------


@dataclass
class RunResult:
    run: models.Model  # a row of tracing.store.run_sink.run_sink().model
    created: bool
    written: int = 0
    duplicates: int = 0
    guard: GuardAnswer | None = None

    def as_dict(self) -> dict:
        run = self.run
        out = {
            "id": run.pk,
            "external_id": (run.settings or {}).get("external_id"),
            "created": self.created,
            "status": run.status,
            "steps_written": self.written,
            "steps_duplicate": self.duplicates,
            "url": run.get_absolute_url(),
        }
        if self.guard is not None:
            out.update(self.guard.as_dict())
        return out


def _end(finish: Finish, now: datetime) -> RunEnd:
    return RunEnd(status=finish.status, final_answer=finish.final_answer, reason=finish.reason,
                  success=finish.success, finished_at=now)


def _new_api_run(owner, project_id: int, req: RunRequest, now: datetime) -> models.Model:
    return run_sink().new_run(NewRun(
        owner=owner, project_id=project_id, source="api", prompt=req.prompt, model_name=req.model or UNKNOWN_MODEL,
        started_at=now, settings=req.settings, context=req.context, labels=req.labels,
        summary=RunSummary.of(req.steps), end=_end(req.finish, now) if req.finish is not None else None,
    ))


def _create_api_runs(owner, project_id: int, fresh: Sequence[tuple[RunRequest, models.Model]]) -> None:
    """New runs, their external ids and their steps, each kind in one COPY."""
    copy_objects([run for _, run in fresh])
    copy_objects([ExternalRun(owner=owner, project_id=project_id, source=ExternalRun.Source.API,
                              external_id=req.external_id, run=run)
                  for req, run in fresh if req.external_id])
    write_new_steps([(run.pk, req.steps) for req, run in fresh if req.steps])


def runs_ingest(*, owner, project_id: int, requests: Sequence[RunRequest]) -> list[RunResult]:
    """Create runs (with their steps and outcome when given) in one transaction.

    The runs land in `project_id` (the token's project). A run with an
    ``external_id`` the user already sent to that project is not created again:
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
        known = locked_external_runs(owner=owner, project_id=project_id, source=ExternalRun.Source.API,
                                     external_ids=external_ids)
        # A guarded run's first steps are judged before they are written, as any batch's.
        held = {pos: req.steps for pos, req in enumerate(requests) if req.guard and req.external_id not in known}
        for pos in held:
            requests[pos].steps = []
        fresh = {pos: (req, _new_api_run(owner, project_id, req, now)) for pos, req in enumerate(requests)
                 if req.external_id not in known}
        _create_api_runs(owner, project_id, list(fresh.values()))
        for pos, (req, run) in fresh.items():
            results[pos] = RunResult(run, True, len(req.steps), 0)
            if pos in held:
                guard = guard_start(run=run, mode=req.guard)
                req.steps = held[pos]
                results[pos].guard = guard_observe(run=run, guard=guard, steps=req.steps, now=now)
                results[pos].written = append_steps(run.pk, req.steps).written
            if req.finish is not None and req.analyse:
                ended.append(run.pk)
        for pos, req in enumerate(requests):
            if pos not in fresh:
                run = run_sink().model.objects.select_for_update().get(pk=known[req.external_id].run_id)
                appended = _append_locked(run, req.steps) if req.steps else Appended(0, 0)
                if req.finish is not None and _finish_locked(run, req.finish, now) and req.analyse:
                    ended.append(run.pk)
                results[pos] = RunResult(run, False, appended.written, appended.duplicates)
    runs_ended(ended)
    return [results[pos] for pos in range(len(requests))]


def _owned_api_run(owner, project_id: int, run_id: int) -> models.Model:
    # The guard's state comes with the locked row (tracing.store.guard): one round trip, not two.
    run = (run_sink().model.objects.select_for_update(of=("self",)).select_related("guard")
           .filter(pk=run_id, owner=owner, project_id=project_id).first())
    if run is None:
        # Another user's (or project's) run looks exactly like a missing one.
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


def _ended_reason(run: models.Model) -> str:
    why = f": {run.reason}" if run.reason else ""
    return f"run {run.pk} has ended ({run.status}{why}); there is nothing left to decide"


def run_append(*, owner, project_id: int, run_id: int,
               steps: Sequence[StepRecord]) -> tuple[Appended, GuardAnswer]:
    """Append a batch; a guarded run's batch is judged first (tracing.store.guard),
    and the batch after a stop was sent acknowledges it: written, then the run
    ends `stopped` by the watchdog."""
    now = timezone.now()
    with transaction.atomic():
        fast_commit()
        run = _owned_api_run(owner, project_id, run_id)
        guard = guard_of(run)
        mode = guard.mode if guard is not None else ""
        if run.status not in run.LIVE_STATUSES:
            appended = _append_locked(run, steps) if steps else Appended(0, 0)
            answer = GuardAnswer(mode=mode, reason=_ended_reason(run) if guard else NOT_GUARDED)
        elif guard is None:
            appended, answer = append_steps(run.pk, steps), GuardAnswer(reason=NOT_GUARDED)
        elif guard.stop is not None:
            appended = append_steps(run.pk, steps)
            finals = [s.text for s in steps if s.kind == "final"]
            guard_stop_end(run=run, guard=guard, now=now, final_answer=finals[-1] if finals else "")
            answer = GuardAnswer(mode=mode, ended=True,
                                 reason=f"run {run.pk} ended: {stop_reason(guard.stop)}, acknowledged by this request")
        else:
            answer = guard_observe(run=run, guard=guard, steps=steps, now=now)
            appended = append_steps(run.pk, steps)
    if answer.ended:
        runs_ended([run.pk])
    return appended, answer


def _finish_locked(run: models.Model, finish: Finish, now: datetime) -> bool:
    """True when this call finished the run (False: it was already finished the same way)."""
    if run.status not in run.LIVE_STATUSES:
        if (run.status, run.success) != (finish.status, finish.success):
            outcome = {True: "success", False: "failure", None: "no outcome"}[run.success]
            raise ApiError(f"run {run.pk} has already ended: {run.status}, {outcome}", 409)
        return False
    run_sink().end(run, _end(finish, now))
    return True


def run_finish_api(*, owner, project_id: int, run_id: int, finish: Finish) -> models.Model:
    with transaction.atomic():
        run = _owned_api_run(owner, project_id, run_id)
        guard = guard_of(run)
        if guard is not None and guard.stop is not None and run.status in run.LIVE_STATUSES:
            # The agent's finish after a stop acknowledges it, whatever status it says.
            guard_stop_end(run=run, guard=guard, now=timezone.now(), final_answer=finish.final_answer)
            finished = True
        elif guard is not None and guard.stop is not None and run.stopped_by == "watchdog":
            finished = False  # acknowledged already (its next batch): the finish is its echo
        else:
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


def _new_otlp_run(owner, project_id: int, trace_id: str, spans: Sequence[Span]) -> models.Model:
    info = describe(spans)
    settings = {"trace_id": trace_id}
    for key in ("agent", "conversation_id", "service"):
        if getattr(info, key):
            settings[key] = getattr(info, key)
    labels = labels_from_attributes(span_label_sources(spans))
    # Span text may hold a NUL (protobuf strings may), which Postgres text refuses.
    return run_sink().new_run(NewRun(
        owner=owner, project_id=project_id, source="otlp", prompt=clean_text(info.prompt),
        model_name=clean_text(info.model or UNKNOWN_MODEL), settings=settings,
        context={"system": info.system} if info.system else {},
        started_at=_ns_to_datetime(info.started_ns) or timezone.now(), labels=labels,
    ))


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


def _traces(owner, project_id: int, by_trace: dict[str, dict[str, Span]],
            known: dict[str, ExternalRun]) -> set[str]:
    """Create the runs of the traces new to this request (``known`` gains their ExternalRuns)."""
    fresh = [(tid, _new_otlp_run(owner, project_id, tid, list(s.values())))
             for tid, s in by_trace.items() if tid not in known]
    copy_objects([run for _, run in fresh])
    created = [ExternalRun(owner=owner, project_id=project_id, source=ExternalRun.Source.OTLP, external_id=tid,
                           run=run) for tid, run in fresh]
    copy_objects(created)
    known.update((ext.external_id, ext) for ext in created)
    return {tid for tid, _ in fresh}


def _join_pending(owner, project_id: int, new: dict[str, dict[str, Span]]) -> None:
    """GenAI log events that arrived before their span join it now (and are no longer pending)."""
    span_ids = list({sid for spans in new.values() for sid in spans})
    if not span_ids:
        return
    rows = list(PendingEvent.objects.filter(owner=owner, project_id=project_id, trace_id__in=list(new),
                                            span_id__in=span_ids).order_by("pk")
                .values_list("pk", "trace_id", "span_id", "event"))
    joined: dict[tuple[str, str], list[dict]] = {}
    for _pk, trace_id, span_id, event in rows:
        if span_id in new.get(trace_id, {}):
            joined.setdefault((trace_id, span_id), []).append(event)
    for (trace_id, span_id), events in joined.items():
        new[trace_id][span_id].join(events)
    used = [pk for pk, trace_id, span_id, _ in rows if (trace_id, span_id) in joined]
    if used:
        PendingEvent.objects.filter(pk__in=used).delete()


def _stored_spans(ext: ExternalRun) -> list[Span]:
    return [Span.from_payload(p) for p in IngestedSpan.objects.filter(trace=ext).values_list("payload", flat=True)]


def _trace_steps(ext: ExternalRun, new: Sequence[Span],
                 state: TraceState) -> tuple[list[StepRecord], list[ModelCallRecord], TraceState]:
    """The steps and model calls the new spans give, and the trace's state after them."""
    if ext.span_count and (state.deferred or needs_rebuild(new, state)):
        # A span that belongs before steps already written (a late batch). Re-
        # deriving the whole trace on every such batch is quadratic when an
        # exporter sends a trace backwards; so wait for the root (which ends the
        # trace) and derive the steps once, in order, from every stored span.
        if not state.finished and not has_root(new):
            state.deferred = True
            state.last_key = max([state.last_key, *(order_key(s) for s in new)])
            return [], [], state
        reset_steps(ext.run_id)
        state = TraceState(seen_at=state.seen_at)
        return *map_trace([*_stored_spans(ext), *new], state), state
    return *map_trace(new, state), state


@dataclass
class _Writes:
    """What one OTLP request writes, gathered so each kind is one statement."""

    spans: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    summaries: list = field(default_factory=list)
    states: list = field(default_factory=list)
    finishes: list = field(default_factory=list)
    promotions: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    ended: list[int] = field(default_factory=list)

    def flush(self) -> None:
        copy_spans(self.spans)
        # Indices come from the locked trace state, so they are new: COPY for all.
        write_new_steps(self.steps)
        calls_record(self.calls)
        add_to_summaries(self.summaries)
        promote_finals(self.promotions)
        save_states(self.states)
        finish_runs(self.finishes)


# What mapping spans to steps can raise on input no check foresaw (a value
# past a limit of Python's): the trace is rejected, not the request.
UNREADABLE = (ValueError, RecursionError, OverflowError, TypeError, KeyError)


def _ingest_trace(trace_id: str, ext: ExternalRun, new: list[Span], result: OtlpResult, writes: _Writes) -> None:
    if ext.span_count + len(new) > MAX_SPANS_PER_TRACE:
        result.rejected += len(new)
        result.rejected_reason = f"trace {trace_id} has more than {MAX_SPANS_PER_TRACE} spans"
        return
    state = TraceState.from_dict(ext.state)
    was_finished = state.finished
    try:
        steps, calls, state = _trace_steps(ext, new, state)
    except UNREADABLE as exc:
        # Nothing of this trace is written yet: its spans are rejected, the
        # batch's other traces are stored (OTLP partial success, never a 500).
        result.rejected += len(new)
        result.rejected_reason = f"trace {trace_id}: its spans could not be read ({str(exc)[:200]})"
        return
    result.accepted += len(new)
    result.without_steps += sum(1 for s in new if classify(s) == "other" and not produces_steps(s, "other"))
    state.seen_at = time.time()
    if state.promote:
        writes.promotions.append((ext.run_id, state.promote))
        state.promote = []
    writes.steps.append((ext.run_id, steps))
    if calls:
        writes.calls.append((ext.run_id, calls))
    writes.spans.extend((ext.pk, s.span_id, s.to_payload()) for s in new)
    writes.summaries.append((ext.run_id, RunSummary.of(steps)))
    writes.states.append((ext.pk, state.to_dict(), len(new)))
    result.run_ids.append(ext.run_id)
    finished = _update_run(ext, new, state, was_finished, writes.ended)
    if finished is not None:
        writes.finishes.append(finished)


def otlp_ingest(*, owner, project_id: int, spans: Sequence[Span], analyse: bool = True) -> OtlpResult:
    """Spans -> runs and steps, one transaction; resent spans are skipped.

    The runs this request ended are analysed after the commit, in a Celery task
    (tracing.store.tasks), so the exporter gets its answer as soon as the spans are
    stored. ``analyse=False`` (a backfill) leaves them for ``manage.py analyse --source otlp``.
    """
    result = OtlpResult()
    by_trace = _by_trace(spans, result)
    writes = _Writes()
    with transaction.atomic():
        fast_commit()
        # The trace's lock first: a concurrent log request for it waits, so
        # each event is joined exactly once (here, or there to a stored span).
        known = locked_external_runs(owner=owner, project_id=project_id, source=ExternalRun.Source.OTLP,
                                     external_ids=list(by_trace))
        old = [tid for tid in by_trace if tid in known]
        stored = stored_span_ids([known[tid].pk for tid in old], [sid for tid in old for sid in by_trace[tid]])
        _join_pending(owner, project_id, {
            tid: {sid: s for sid, s in spans.items() if tid not in known or (known[tid].pk, sid) not in stored}
            for tid, spans in by_trace.items()})
        _traces(owner, project_id, by_trace, known)
        for trace_id, trace_spans in by_trace.items():
            ext = known[trace_id]
            new = [s for s in trace_spans.values() if (ext.pk, s.span_id) not in stored]
            result.duplicates += len(trace_spans) - len(new)
            if new:
                _ingest_trace(trace_id, ext, new, result, writes)
        writes.flush()
    if analyse:
        runs_ended_later(writes.ended)
    return result


@dataclass
class LogsResult:
    accepted: int = 0  # events joined to a stored span or kept until it comes
    duplicates: int = 0
    rejected: int = 0
    rejected_reason: str = ""
    run_ids: list[int] = field(default_factory=list)


def _keyed(events: Sequence[dict]) -> dict[tuple[str, str], list[dict]]:
    """The request's events by (trace, span), each given the key that tells a resend."""
    by_span: dict[tuple[str, str], list[dict]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for event in events:
        where = (event["trace_id"], event["span_id"])
        record = {k: event[k] for k in ("name", "time_ns", "attrs", "body")}
        first = event_key(record, 0)
        occurrence = seen[(*where, first)] = seen.get((*where, first), -1) + 1
        record["key"] = event_key(record, occurrence) if occurrence else first
        by_span.setdefault(where, []).append(record)
    return by_span


def otlp_logs_ingest(*, owner, project_id: int, batch: LogBatch, analyse: bool = True) -> LogsResult:
    """GenAI log events -> the spans they belong to, whichever arrived first.

    An event whose span is stored joins it, and the trace's steps are derived
    again with the messages it brought (at once when the trace has ended;
    else once, when its root arrives, as for a span out of order); an event
    whose span has not arrived waits for it in PendingEvent, in Postgres.
    """
    result = LogsResult(rejected=batch.not_genai + batch.unjoinable, rejected_reason=batch.message())
    by_span = _keyed(batch.events)
    trace_ids = sorted({tid for tid, _ in by_span})
    ended: list[int] = []
    with transaction.atomic():
        fast_commit()
        known = locked_external_runs(owner=owner, project_id=project_id, source=ExternalRun.Source.OTLP,
                                     external_ids=trace_ids)
        by_pk = {ext.pk: ext for ext in known.values()}
        rows = list(IngestedSpan.objects.filter(trace_id__in=list(by_pk), span_id__in=list({s for _, s in by_span}))
                    .only("pk", "trace_id", "span_id", "payload")) if by_pk else []
        touched: dict[int, list[Span]] = {}
        changed = []
        for row in rows:
            ext = by_pk[row.trace_id]
            events = by_span.pop((ext.external_id, row.span_id), None)
            if events is None:
                continue
            span = Span.from_payload(row.payload)
            had = len(span.events)
            span.join(events)
            added = len(span.events) - had
            result.accepted += added
            result.duplicates += len(events) - added
            if added:
                row.payload = clean_value(span.to_payload())
                changed.append(row)
                touched.setdefault(ext.pk, []).append(span)
        IngestedSpan.objects.bulk_update(changed, ["payload"], batch_size=500)
        waiting = [(tid, sid, e) for (tid, sid), events in by_span.items() for e in events]
        have = set(PendingEvent.objects.filter(
            owner=owner, project_id=project_id, trace_id__in=trace_ids, key__in=[e["key"] for *_, e in waiting])
            .values_list("trace_id", "span_id", "key")) if waiting else set()
        pending = [PendingEvent(owner=owner, project_id=project_id, trace_id=tid, span_id=sid, key=e["key"],
                                event=clean_value(e)) for tid, sid, e in waiting if (tid, sid, e["key"]) not in have]
        # A concurrent resend of the same batch stores it once (the unique key).
        PendingEvent.objects.bulk_create(pending, ignore_conflicts=True)
        result.accepted += len(pending)
        result.duplicates += len(waiting) - len(pending)
        live = []
        for ext_pk, spans in touched.items():
            ext = by_pk[ext_pk]
            result.run_ids.append(ext.run_id)
            state = TraceState.from_dict(ext.state)
            if state.finished:
                _events_joined(ext, ended)
            else:
                # Steps already written lack these messages: the trace is derived
                # once, in order, when its root arrives (as for a span out of order).
                state.deferred = True
                live.append((ext.pk, state.to_dict(), 0))
                _run_fields_from(ext, spans)
        save_states(live)
    if analyse:
        runs_ended_later(ended)
    return result


def _events_joined(ext: ExternalRun, ended: list[int]) -> None:
    """Stored spans of an ended trace gained messages: its steps are derived again."""
    spans = _stored_spans(ext)
    reset_steps(ext.run_id)
    state = TraceState(seen_at=TraceState.from_dict(ext.state).seen_at)
    steps, calls = map_trace(spans, state)
    if not state.finished:  # ended by the trace timeout, its root never came
        steps += end_trace(state)
    write_new_steps([(ext.run_id, steps)])
    calls_record([(ext.run_id, calls)])
    add_to_summaries([(ext.run_id, RunSummary.of(steps))])
    promote_finals([(ext.run_id, state.promote)])
    state.promote = []
    save_states([(ext.pk, state.to_dict(), 0)])
    _run_fields_from(ext, spans)
    run = type(ext.run).objects.only("status", "finished_at", "reason").get(pk=ext.run_id)
    # The reason stays, unless it was the missing answer the messages now give.
    reason = "" if run.reason == NO_FINAL_REASON else run.reason
    run_id, end = _finish_row(ext.run_id, state, run.finished_at or timezone.now(), reason)
    # How the run ended stays as it was (the spans did not change, only their messages).
    finish_runs([(run_id, replace(end, status=run.status))], live_only=False)
    ended.append(ext.run_id)


def _run_fields_from(ext: ExternalRun, spans: Sequence[Span]) -> None:
    """The prompt, system prompt and model a trace's messages name, where the run lacks them."""
    run = ext.run
    info = describe(spans)
    fields: dict = {}
    if info.prompt and not run.prompt:
        fields["prompt"] = clean_text(info.prompt)
    if info.system and not (run.context or {}).get("system"):
        fields["context"] = clean_value({**(run.context or {}), "system": info.system})
    if run.model_name == UNKNOWN_MODEL and info.model:
        fields["model_name"] = clean_text(info.model)[:120]
    if fields:
        type(run).objects.filter(pk=run.pk).update(**fields)


def _update_run(ext: ExternalRun, new: Sequence[Span], state: TraceState, was_finished: bool,
                ended: list[int]) -> tuple | None:
    """Late run fields (model, prompt, agent, system prompt) now; the finish, if
    this batch ended the trace, as a row for finish_runs."""
    run = ext.run
    change = RunChange()
    if ext.span_count:  # a new run already has what describe() found
        info = describe(new)
        if run.model_name == UNKNOWN_MODEL and info.model:
            change.model_name = info.model
        # The root agent span, which ends last, names the task better than a
        # model call's prompt taken from an earlier batch.
        prompt = clean_text(info.prompt)
        if prompt and (not run.prompt or (info.prompt_from_root and prompt != run.prompt)):
            change.prompt = prompt
        # agent.name may first appear in any batch (the agent span ends last):
        # until then the run is named after the service or a span.
        settings = dict(run.settings or {})
        if info.agent_named and settings.get("agent") != info.agent:
            settings["agent"] = info.agent
            change.settings = settings
        if info.system and not (run.context or {}).get("system"):
            change.context = {**(run.context or {}), "system": info.system}
        # Tags, metadata or a session on spans of a later batch (the agent span,
        # which ends last, often carries them) join the run's.
        new_labels = labels_from_attributes(span_label_sources(new))
        if new_labels.tags or new_labels.metadata or new_labels.session_id:
            had = Labels(tags=list(run.tags or []), metadata=dict(run.metadata or {}), session_id=run.session_id or "")
            merged = labels_merged(had, new_labels)
            if merged != had:
                change.labels = merged
    run_sink().change(run, change)
    if state.finished and not was_finished:
        ended.append(run.pk)
        roots = [s for s in new if not s.parent_id]
        finished_at = _ns_to_datetime(max((s.end_ns for s in roots), default=0)) or timezone.now()
        return _finish_row(run.pk, state, finished_at, "")
    if state.finished and run.status not in run_sink().live_statuses:
        ended.append(run.pk)  # a late span changed a finished run's steps
    return None


NO_FINAL_REASON = "the trace ended without a final answer"


def _finish_row(run_id: int, state: TraceState, finished_at: datetime, reason: str) -> tuple[int, RunEnd]:
    """A finish_runs row. How a trace ended is known ("error" or not); whether
    its answer was right is not, unless the trace says (``agentlab.success``):
    a final answer is not a correct one, so ``success`` stays null, as for a
    client's run that does not set it."""
    if state.outcome == ERROR:
        return run_id, RunEnd(status=ERROR, final_answer=state.final_answer, finished_at=finished_at,
                              success=state.success, reason=reason)
    return run_id, RunEnd(status=FINISHED, final_answer=state.final_answer, finished_at=finished_at,
                          success=state.success, reason=reason or ("" if state.final else NO_FINAL_REASON))


def runs_ended_later(run_ids: Sequence[int]) -> None:
    """Analyse these ended runs after the commit: in a Celery task, or inline
    (INGEST_ANALYSE_INLINE: tests and a deployment without workers)."""
    run_ids = list(run_ids)
    if not run_ids:
        return
    if django_settings.INGEST_ANALYSE_INLINE:
        runs_ended(run_ids)
        return
    transaction.on_commit(lambda: _enqueue_analysis(run_ids))


def _enqueue_analysis(run_ids: list[int]) -> None:
    # The spans are stored and the exporter must get its 200: a broker that is
    # down leaves the runs for `manage.py analyse --source otlp`, it does not
    # fail the request. By name: tracing.store.tasks imports this module.
    try:
        current_app.send_task(ANALYSE_TASK, args=[run_ids])
    except Exception:  # kombu raises several unrelated types for "broker unreachable"
        logger.exception("could not enqueue the analysis of runs %s; run `manage.py analyse --source otlp`", run_ids)


def traces_close_stale(*, older_than_s: float | None = None, analyse: bool = True) -> list[int]:
    """End OTLP traces whose root span never came: no span for ``older_than_s``
    (INGEST_TRACE_TIMEOUT_S). Their pending steps are derived, the run ends
    with the reason stated. Returns the runs ended."""
    timeout = django_settings.INGEST_TRACE_TIMEOUT_S if older_than_s is None else older_than_s
    cutoff = time.time() - timeout
    live = list(run_sink().live_statuses)
    candidates = list(
        ExternalRun.objects.filter(source=ExternalRun.Source.OTLP, run__status__in=live)
        .values_list("pk", "state")
    )
    stale = [pk for pk, state in candidates if float((state or {}).get("seen_at") or 0) < cutoff]
    # GenAI events whose span never came within the same timeout: no run will show them.
    PendingEvent.objects.filter(received_at__lt=timezone.now() - timedelta(seconds=timeout)).delete()
    ended: list[int] = []
    for pk in stale:
        with transaction.atomic():
            ext = (ExternalRun.objects.select_for_update(of=("self",)).select_related("run")
                   .filter(pk=pk, run__status__in=live).first())
            if ext is None:
                continue
            state = TraceState.from_dict(ext.state)
            if float(state.seen_at or 0) >= cutoff:
                continue  # a batch came meanwhile
            if state.deferred:
                reset_steps(ext.run_id)
                state = TraceState(seen_at=state.seen_at)
                steps, calls = map_trace(_stored_spans(ext), state)
            else:
                steps, calls = [], []
            steps += end_trace(state)
            write_new_steps([(ext.run_id, steps)])
            calls_record([(ext.run_id, calls)])
            add_to_summaries([(ext.run_id, RunSummary.of(steps))])
            promote_finals([(ext.run_id, state.promote)])
            state.promote = []
            save_states([(ext.pk, state.to_dict(), 0)])
            reason = (f"the trace's root span never arrived: ended after {timeout:g} s without a new span "
                      "(INGEST_TRACE_TIMEOUT_S)")
            finish_runs([_finish_row(ext.run_id, state, timezone.now(), reason)])
            ended.append(ext.run_id)
    if analyse:
        runs_ended(ended)
    return ended
