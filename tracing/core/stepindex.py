"""Fill the steps' search column for rows written before it existed (or
re-index all after a tokeniser change): the migration and `manage.py
indexsteps` share this."""

from __future__ import annotations

import json

from tracing.core.stepsearch import step_document

# Steps per UPDATE: big enough to amortise the round trip, small enough that
# one batch of long observations stays a few MB in memory.
BATCH = 2_000


def index_steps(connection, *, redo: bool = False, batch: int = BATCH, progress=None) -> int:
    """Write `search` for every step lacking it (all steps with `redo`), in id
    order, one batch per statement; returns the number of steps written.
    Takes a connection so the migration can pass its schema editor's."""
    done = 0
    last_id = 0
    where = "" if redo else "AND search IS NULL"
    with connection.cursor() as cur:
        while True:
            cur.execute(
                f"SELECT id, text, tool, args::text FROM tracing_step WHERE id > %s {where} ORDER BY id LIMIT %s",
                [last_id, batch],
            )
            rows = cur.fetchall()
            if not rows:
                return done
            docs = [(pk, step_document(text, tool, json.loads(args) if args else None)) for pk, text, tool, args in rows]
            values = ", ".join(["(%s::bigint, %s::tsvector)"] * len(docs))
            cur.execute(f"UPDATE tracing_step s SET search = v.doc FROM (VALUES {values}) AS v(id, doc) WHERE s.id = v.id",
                        [x for pair in docs for x in pair])
            done += len(docs)
            last_id = rows[-1][0]
            if progress:
                progress(done)
