"""The `search` tool's backend: Postgres full-text search over Document.

Postgres has no Chinese parser, so text is segmented here (words, CJK runs as
character bigrams: tracing.core.normalize.search_tokens, as the in-memory corpus does) and indexed with
the `simple` configuration. The index finds candidates sharing any query token;
a candidate must then cover at least MIN_QUERY_COVERAGE of the query's tokens,
so a query about an unknown (or misspelt) entity comes back empty instead of
matching on one common word — the "empty result" the field's traps rely on.
"""

from __future__ import annotations

from django.db import connection

from runs.agent.tools import Document as DocRecord
from tracing.core.normalize import search_tokens

# Cap on query tokens: a pasted paragraph becomes a huge OR that ranks nothing
# better than its first few words do.
MAX_QUERY_TOKENS = 32
# Share of the query's tokens a document must contain (the same rule as the
# in-memory CorpusSearch): one shared common word is not a hit.
MIN_QUERY_COVERAGE = 0.5
# Candidates ranked by Postgres before the coverage filter.
CANDIDATES = 50


class PostgresSearch:
    def __init__(self, guard=None) -> None:
        # A database outage is the worker's to ride out (runs.launch.lease), not
        # an observation "search failed" that would send the agent elsewhere.
        self.guard = guard

    def search(self, query: str, k: int = 5) -> list[DocRecord]:
        toks = list(dict.fromkeys(search_tokens(query)))[:MAX_QUERY_TOKENS]
        if not toks:
            return []
        # Tokens are letters, digits and CJK only (see tracing.core.normalize), so
        # quoting them keeps to_tsquery from reading operators.
        tsq = " | ".join(f"'{t}'" for t in toks)
        sql = """
            SELECT slug, title, body, lang, COALESCE(flags->>'fault', ''), search_tokens,
                   ts_rank_cd(to_tsvector('simple', search_tokens), q) AS rank
            FROM runs_document, to_tsquery('simple', %s) q
            WHERE to_tsvector('simple', search_tokens) @@ q
            ORDER BY rank DESC, slug
            LIMIT %s
        """
        fetch = self.guard(_fetch) if self.guard is not None else _fetch
        rows = fetch(sql, [tsq, CANDIDATES])
        wanted = set(toks)
        scored = []
        for slug, title, body, lang, fault, doc_tokens, rank in rows:
            coverage = len(wanted & set(doc_tokens.split())) / len(wanted)
            if coverage >= MIN_QUERY_COVERAGE:
                scored.append((coverage, rank, DocRecord(slug=slug, title=title, body=body, lang=lang, fault=fault)))
        scored.sort(key=lambda item: (-item[0], -item[1]))
        return [doc for _, _, doc in scored[:k]]


def _fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()
