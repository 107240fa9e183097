"""SQL on tracing's step table that other apps need: here, beside the table,
so no other app writes SQL against tracing_step (runs' search and what-if call these)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from django.db import connection
from django.db.models import BooleanField, F, Func, QuerySet
from django.db.models.expressions import RawSQL

from tracing.core.stepsearch import MAX_INDEXED_CHARS, substring_patterns, tsquery_literal
from tracing.store.models import Step

# A step matches the query's tokens (params: the tsquery literal, the LIKE
# patterns): by its search column once indexed, by its raw text while the
# column is NULL (writers leave it to tracing.store.step_indexer, a few seconds
# behind). The second arm reads only unindexed rows: for an indexed row
# `search IS NULL` is false before any text is lower-cased, and a bitmap scan
# ORs the GIN index with the partial index of unindexed rows.
_RAW_DOC = (f"(left({{text}}, {MAX_INDEXED_CHARS}) || ' ' || {{tool}} || ' ' || "
            f"coalesce(left(({{args}})::text, {MAX_INDEXED_CHARS}), ''))")
# NFKC as the tokeniser reads the text (full-width letters as plain ones); ASCII
# is NFKC already, and Postgres' normalize() costs ~20 µs a step even on it
# (90 % of the fallback, bench/search.py), so only other text goes through it.
_MATCH_SQL = (
    f"({{search}} @@ %s::tsquery OR ({{search}} IS NULL AND lower(CASE WHEN {_RAW_DOC} ~ '^[\\x01-\\x7f]*$' "
    f"THEN {_RAW_DOC} ELSE normalize({_RAW_DOC}, NFKC) END) LIKE ALL (%s::text[])))"
)


def step_match_params(tokens: list[str]) -> list:
    return [tsquery_literal(tokens), substring_patterns(tokens)]


class StepMatch(Func):
    """`Step.objects.filter(StepMatch(tokens))`: steps holding every token (_MATCH_SQL)."""

    output_field = BooleanField()

    def __init__(self, tokens: list[str]) -> None:
        super().__init__(F("search"), F("text"), F("tool"), F("args"))
        self.tokens = list(tokens)

    def as_sql(self, compiler, connection, **extra):
        (search, _), (text, _), (tool, _), (args, _) = (compiler.compile(e) for e in self.get_source_expressions())
        return _MATCH_SQL.format(search=search, text=text, tool=tool, args=args), step_match_params(self.tokens)


# The first matching step of each run: a LATERAL per run walks that run's
# steps in index order (the unique (run, index) index) and stops at the first
# hit, so a 100,000-step run costs no more than its first match; a DISTINCT ON
# over all matches sorted 90,000 rows for a page holding one such run.
# Params: the run ids, then step_match_params.
FIRST_HITS_SQL = f"""
SELECT s.id FROM unnest(%s::bigint[]) AS r(id)
CROSS JOIN LATERAL (
    SELECT id FROM tracing_step
    WHERE run_id = r.id AND {_MATCH_SQL.format(search="search", text="text", tool="tool", args="args")}
    ORDER BY index LIMIT 1
) s
"""

# Rows per round trip of the server-side cursor.
FETCH_ROWS = 5000


def matching_steps(tokens: list[str]) -> QuerySet[Step]:
    """Steps holding every token, indexed or not yet."""
    return Step.objects.filter(StepMatch(tokens))


def first_matching_steps(run_ids: Sequence[int], tokens: list[str]) -> QuerySet[Step]:
    """The first step of each run holding every token, one query."""
    return Step.objects.filter(id__in=RawSQL(FIRST_HITS_SQL, [list(run_ids), *step_match_params(tokens)]))


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
