"""Fill the steps' search column: writers leave it NULL (the tokenising is
kept off their hot path) and this builds it afterwards, in id-ordered batches.
The sweepers' tick (tracing.store.step_indexer), the migration that added the
column and `manage.py indexsteps` (also: re-index all after a tokeniser
change) share it."""

from __future__ import annotations

import json

from tracing.core.stepsearch import step_document

# Steps per UPDATE: big enough to amortise the round trip, small enough that
# one batch of long observations stays a few MB in memory.
BATCH = 2_000

# Unindexed steps after `id > %s`, in id order: the partial index on id WHERE
# search IS NULL (step_unindexed_idx) serves it without touching indexed rows.
_PENDING_SQL = "SELECT id, text, tool, args::text FROM tracing_step WHERE id > %s {where} ORDER BY id LIMIT %s {lock}"


def pending_sql(*, redo: bool = False, skip_locked: bool = False) -> str:
    """The select of the next batch (params: last id, batch size). `skip_locked`
    (inside a transaction) passes over rows a writer holds, so the indexer
    never waits on, nor deadlocks with, an ingestion or a deletion."""
    return _PENDING_SQL.format(where="" if redo else "AND search IS NULL",
                               lock="FOR UPDATE SKIP LOCKED" if skip_locked else "")


def write_documents(cur, rows) -> None:
    """Build and store the search document of each (id, text, tool, args text) row, one UPDATE."""
    docs = [(pk, step_document(text, tool, json.loads(args) if args else None)) for pk, text, tool, args in rows]
    values = ", ".join(["(%s::bigint, %s::tsvector)"] * len(docs))
    cur.execute(f"UPDATE tracing_step s SET search = v.doc FROM (VALUES {values}) AS v(id, doc) WHERE s.id = v.id",
                [x for pair in docs for x in pair])


def index_steps(connection, *, redo: bool = False, batch: int = BATCH, progress=None) -> int:
    """Write `search` for every step lacking it (all steps with `redo`), in id
    order, one batch per statement; returns the number of steps written.
    Takes a connection so the migration can pass its schema editor's."""
    done = 0
    last_id = 0
    sql = pending_sql(redo=redo)
    with connection.cursor() as cur:
        while True:
            cur.execute(sql, [last_id, batch])
            rows = cur.fetchall()
            if not rows:
                return done
            write_documents(cur, rows)
            done += len(rows)
            last_id = rows[-1][0]
            if progress:
                progress(done)
