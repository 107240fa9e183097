"""SQL on tracing's step table that other apps need: here, beside the table,
so no other app writes SQL against tracing_step (runs' search and what-if call these)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from tracing.store.models import Step

# The first matching step of each run: a LATERAL per run walks that run's
# steps in index order (the unique (run, index) index) and stops at the first
# hit, so a 100,000-step run costs no more than its first match; a DISTINCT ON
# over all matches sorted 90,000 rows for a page holding one such run.
FIRST_HITS_SQL = """
SELECT s.id FROM unnest(%s::bigint[]) AS r(id)
CROSS JOIN LATERAL (
    SELECT id FROM tracing_step WHERE run_id = r.id AND search @@ %s::tsquery ORDER BY index LIMIT 1
) s
"""

# Rows per round trip of the server-side cursor.
FETCH_ROWS = 5000


def first_matching_steps(run_ids: Sequence[int], tsquery: str) -> QuerySet[Step]:
    """The first step of each run whose search column matches `tsquery` (a tsquery literal), one query."""
    return Step.objects.filter(id__in=RawSQL(FIRST_HITS_SQL, [list(run_ids), tsquery]))


def stream_steps(run_ids: Sequence[int]) -> Iterator[tuple]:
    """(run id, index, kind, role, text, tool, args, meta) of these runs' steps in
    run and index order, streamed with a server-side cursor (inside the caller's
    transaction) instead of loading every step at once."""
    if not run_ids:
        return
    conn = connection.connection  # psycopg: a named cursor is server-side
    with conn.cursor(name="tracing_steps_stream") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(
            "SELECT run_id, index, kind, role, text, tool, args, meta FROM tracing_step "
            "WHERE run_id = ANY(%s) ORDER BY run_id, index",
            [list(run_ids)],
        )
        for run_id, index, kind, role, text, tool, args, meta in cur:
            yield run_id, index, kind, role, text, tool, _json(args), _json(meta)


def _json(value):
    # Django registers a loader that leaves jsonb as text on its connection.
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
