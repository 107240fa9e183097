"""Database writes of the ingestion API: runs, steps (COPY or INSERT), summaries, spans.

Every function here runs inside the caller's transaction; the views open one
per request, so a rejected or failed batch leaves nothing half-written.

Summaries: the recorder keeps the run's summary columns current with one
statement per step. Bulk paths cannot (COPY has no RETURNING), so they write
the steps, then add what they wrote to the run's summary in the same
transaction (tracing.store.recorder.add_to_summaries): the same rule
(tracing.core.summary), one UPDATE per request instead of one per step.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.db.models import F
from django.utils import timezone

from tracing.core.steps import Step as StepRecord
from tracing.core.steps import role_of
from tracing.core.stepsearch import step_document
from tracing.core.summary import RunSummary
from tracing.store.models import ApiToken, ExternalRun, IngestedSpan, ModelCall, Step
from tracing.store.recorder import add_to_summaries, clean_json, clean_text
from tracing.store.run_sink import RunEnd, run_sink

# Below this many rows a multi-row INSERT is cheaper than opening a COPY; a
# live agent appends one step at a time, a bulk client hundreds.
COPY_MIN_ROWS = 32
# last_used_at is for "is this token still in use?", not an audit log: write
# it at most once a minute instead of on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)
TOKEN_PREFIX = "al_"
# Characters of the token shown in lists (the prefix plus a few random ones).
TOKEN_DISPLAY_CHARS = 10
_STEP_COLUMNS = (
    "run_id, index, kind, role, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, created_at, search"
)


# --- tokens -----------------------------------------------------------------------


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_create(*, user, project_id: int, name: str) -> tuple[ApiToken, str]:
    """A new token of `user` in a project; the plain text is returned once and never stored."""
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, project_id=project_id, name=name[:100] or "token", token_hash=hash_token(plain), prefix=plain[:TOKEN_DISPLAY_CHARS]
    )
    return token, plain


def token_revoke(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()


def token_user(plain: str) -> ApiToken | None:
    """An active token (its user and project loaded), or None.

    A token works while its user is active and still a member of its project:
    leaving the project (or the project going) ends the token too. The
    member's role and the project's name are read with it (`token.role`,
    `token.project_name`), at every request, so a demotion binds the token at once.
    """
    token = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=hash_token(plain), revoked_at__isnull=True, user__is_active=True,
                project__memberships__user=F("user"))
        .annotate(role=F("project__memberships__role"), project_name=F("project__name"))
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


# --- steps ------------------------------------------------------------------------


def _document(text: str, s: StepRecord, docs: dict) -> str:
    # Agents repeat themselves ("Nothing happens.", the same search): about
    # half the steps of a bulk batch repeat an earlier one's text, and
    # tokenising is most of the per-row cost. Only hashable args are keys.
    key = (text, s.tool, s.args) if s.args is None or type(s.args) is str else None
    doc = docs.get(key) if key is not None else None
    if doc is None:
        doc = step_document(text, s.tool, s.args)
        if key is not None:
            docs[key] = doc
    return doc


def _rows(run_id: int, steps: Iterable[StepRecord], now: datetime, docs: dict | None = None):
    """COPY / INSERT rows; `docs` memoises search documents across the runs of one write.
    The search column is NULL unless STEP_SEARCH_INLINE: tracing.store.step_indexer
    builds it after the write (it was half of a COPY's cost)."""
    inline = settings.STEP_SEARCH_INLINE
    docs = {} if docs is None else docs
    for s in steps:
        text = clean_text(s.text)
        yield (
            run_id, s.index, s.kind, role_of(s), text, clean_text(s.tool or ""), clean_json(s.args),
            clean_json(s.meta or {}), s.prompt_tokens, s.completion_tokens, s.latency_ms, now,
            # The search column as a tsvector literal: COPY and the cast below read it as is.
            _document(text, s, docs) if inline else None,
        )


def copy_steps(batches: Sequence[tuple[int, Sequence[StepRecord]]]) -> int:
    """COPY the steps of one or more runs into tracing_step; the indices must be new."""
    now = timezone.now()
    count = 0
    connection.ensure_connection()
    # wrap_database_errors: the raw psycopg COPY would otherwise raise psycopg's
    # errors, not Django's IntegrityError / DataError that callers handle.
    with connection.wrap_database_errors, connection.cursor() as cur, cur.cursor.copy(
        f"COPY tracing_step ({_STEP_COLUMNS}) FROM STDIN"
    ) as copy:
        docs: dict = {}
        for run_id, steps in batches:
            for row in _rows(run_id, steps, now, docs):
                copy.write_row(row)
                count += 1
    return count


def insert_steps(run_id: int, steps: Sequence[StepRecord]) -> set[int]:
    """A plain multi-row INSERT (live appends); returns the indices actually written."""
    if not steps:
        return set()
    now = timezone.now()
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s, %s::tsvector)"] * len(steps))
    params = [v for row in _rows(run_id, steps, now) for v in row]
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO tracing_step ({_STEP_COLUMNS}) VALUES {values} "
            "ON CONFLICT (run_id, index) DO NOTHING RETURNING index",
            params,
        )
        return {row[0] for row in cur.fetchall()}


def write_new_steps(batches: Sequence[tuple[int, Sequence[StepRecord]]]) -> None:
    """Steps of runs that have none yet (no conflicts possible): one COPY for all,
    or plain inserts when there are too few to be worth opening a COPY."""
    total = sum(len(steps) for _, steps in batches)
    if total >= COPY_MIN_ROWS:
        copy_steps(batches)
    else:
        for run_id, steps in batches:
            insert_steps(run_id, steps)


@dataclass
class Appended:
    written: int
    duplicates: int


def append_steps(run_id: int, steps: Sequence[StepRecord]) -> Appended:
    """Append to a run whose row the caller has locked (SELECT ... FOR UPDATE).

    Idempotent on (run, index): an index already stored is skipped (the first
    write wins), so a client may resend a batch after a timeout.
    """
    if not steps:
        return Appended(0, 0)
    if len(steps) < COPY_MIN_ROWS:
        written_indices = insert_steps(run_id, steps)
        written = [s for s in steps if s.index in written_indices]
    else:
        # The run row is locked, so no other request can add indices between
        # this check and the COPY.
        with connection.cursor() as cur:
            cur.execute(
                "SELECT index FROM tracing_step WHERE run_id = %s AND index BETWEEN %s AND %s",
                [run_id, steps[0].index, steps[-1].index],
            )
            stored = {row[0] for row in cur.fetchall()}
        written = [s for s in steps if s.index not in stored]
        if written:
            copy_steps([(run_id, written)])
    add_to_summaries([(run_id, RunSummary.of(written))])
    return Appended(len(written), len(steps) - len(written))


def reset_steps(run_id: int) -> None:
    """Remove a run's steps and model calls and zero its summary (an OTLP trace re-derived in order)."""
    Step.objects.filter(run_id=run_id).delete()
    ModelCall.objects.filter(run_id=run_id).delete()
    run_sink().reset_summary(run_id)


def _column_getter(f):
    """How one field's value goes into COPY: plain attributes where psycopg adapts them
    itself (the general get_db_prep_save path is most of the cost), Django's own
    preparation for anything else."""
    if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
        return lambda obj: f.pre_save(obj, True)
    if isinstance(f, models.JSONField):
        return lambda obj: clean_json(getattr(obj, f.attname))
    if isinstance(f, (models.CharField, models.TextField, models.IntegerField, models.FloatField,
                      models.BooleanField, models.DateTimeField, models.ForeignKey, ArrayField)):
        return lambda obj: getattr(obj, f.attname)
    return lambda obj: f.get_db_prep_save(f.pre_save(obj, True), connection)


def copy_objects(objects: Sequence) -> None:
    """Insert new model instances of one model with COPY, setting their primary keys.

    Django's bulk_create compiles a parameter per field per row: for the 40-odd
    columns of the run table that is most of a bulk request's time. Ids come from
    the table's sequence first, so the instances are usable (FKs) afterwards.
    Every concrete field is written as Django would (defaults, auto_now_add).
    """
    if not objects:
        return
    model = type(objects[0])
    meta = model._meta
    table = meta.db_table
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, meta.pk.column, len(objects)],
        )
        for obj, (pk,) in zip(objects, cur.fetchall(), strict=True):
            obj.pk = pk
        columns = ", ".join(connection.ops.quote_name(f.column) for f in [meta.pk, *fields])
        getters = [_column_getter(f) for f in fields]
        with connection.wrap_database_errors, cur.cursor.copy(
            f"COPY {connection.ops.quote_name(table)} ({columns}) FROM STDIN"
        ) as copy:
            for obj in objects:
                copy.write_row([obj.pk, *(get(obj) for get in getters)])
    for obj in objects:
        obj._state.adding = False
        obj._state.db = "default"


def fast_commit() -> None:
    """Inside an ingestion transaction: do not wait for the WAL flush at commit.

    Same trade as tracing.store.recorder: a trace record, not a payment. A Postgres
    crash can lose the last fraction of a second of ingested steps (the client
    resends; writes are idempotent) but never corrupts or half-writes a batch.
    """
    with connection.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit TO OFF")


# --- spans and trace state --------------------------------------------------------


def stored_span_ids(trace_ids: Sequence[int], span_ids: Sequence[str]) -> set[tuple[int, str]]:
    """Which of these spans the traces already hold. Asked for the request's own
    span ids only: reading every stored id of a long trace on each batch would
    make a trace sent span by span quadratic."""
    if not trace_ids or not span_ids:
        return set()
    return set(IngestedSpan.objects.filter(trace_id__in=trace_ids, span_id__in=list(set(span_ids)))
               .values_list("trace_id", "span_id"))


def copy_spans(rows: Sequence[tuple[int, str, dict]]) -> None:
    if not rows:
        return
    connection.ensure_connection()
    with connection.wrap_database_errors, connection.cursor() as cur, cur.cursor.copy(
        "COPY tracing_ingestedspan (trace_id, span_id, payload) FROM STDIN"
    ) as copy:
        for trace_id, span_id, payload in rows:
            copy.write_row((trace_id, span_id, clean_json(payload)))


def save_states(rows: Sequence[tuple[int, dict, int]]) -> None:
    """(external run id, mapper state, spans added) for each trace of a batch, in one statement."""
    if not rows:
        return
    values = ", ".join(["(%s::bigint, %s::jsonb, %s::int)"] * len(rows))
    params = [v for ext_id, state, added in rows for v in (ext_id, clean_json(state), added)]
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE tracing_externalrun e SET state = v.state, span_count = e.span_count + v.added "
            f"FROM (VALUES {values}) AS v(id, state, added) WHERE e.id = v.id",
            params,
        )


def finish_runs(ends: Sequence[tuple[int, RunEnd]], *, live_only: bool = True) -> None:
    """(run id, how it ended) for runs still live (or, not ``live_only``, for
    ended runs whose steps were derived again), in one statement (the run sink's)."""
    run_sink().end_live(ends, live_only=live_only)


def promote_finals(rows: Sequence[tuple[int, Sequence[int]]]) -> None:
    """(run id, step indices): thoughts stored by an earlier batch that turned out to be the final answer."""
    rows = [(run_id, list(indices)) for run_id, indices in rows if indices]
    if not rows:
        return
    with connection.cursor() as cur:
        for run_id, indices in rows:
            cur.execute("UPDATE tracing_step SET kind = 'final' WHERE run_id = %s AND index = ANY(%s)",
                        [run_id, indices])


def _lock_key(owner_id: int, project_id: int, source: str, external_id: str) -> int:
    digest = hashlib.blake2b(f"{owner_id}:{project_id}:{source}:{external_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def locked_external_runs(*, owner, project_id: int, source: str,
                         external_ids: Sequence[str]) -> dict[str, ExternalRun]:
    """The user's ExternalRuns in the project for these ids, each locked for this transaction, found or not.

    An advisory lock per id (taken in sorted order, so two requests cannot
    deadlock) makes a concurrent request for the same trace wait until this one
    commits, then find the run this one created instead of creating it again.
    """
    if external_ids:
        keys = sorted({_lock_key(owner.pk, project_id, source, e) for e in external_ids})
        with connection.cursor() as cur:
            cur.execute("SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT unnest(%s::bigint[]) AS k) s", [keys])
    rows = (
        ExternalRun.objects.select_for_update(of=("self",))
        .select_related("run")
        .only("id", "external_id", "state", "span_count", "run_id", "run__status", "run__model_name", "run__prompt",
              "run__settings", "run__context")
        .filter(owner=owner, project_id=project_id, source=source, external_id__in=list(external_ids))
    )
    return {row.external_id: row for row in rows}
