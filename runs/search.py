"""The `search` tool's backend: Postgres full-text search over Document.

Postgres has no Chinese parser, so text is segmented here (words, CJK runs as
character bigrams, the same rules as argument normalisation) and indexed with
the `simple` configuration. A query matches any of its tokens; documents that
share more tokens (and rarer ones) rank higher via ts_rank_cd.
"""

from __future__ import annotations

from django.db import connection

from runs.agent.tools import Document as DocRecord
from tracing.normalize import tokens

# Cap on query tokens: a pasted paragraph becomes a huge OR that ranks nothing
# better than its first few words do.
MAX_QUERY_TOKENS = 32


def tokens_for_index(text: str) -> str:
    return " ".join(tokens(text))


def _tsquery(query: str) -> str:
    toks = tokens(query)[:MAX_QUERY_TOKENS]
    # Tokens are letters, digits and CJK only (see tracing.normalize), so quoting
    # them is enough to keep to_tsquery from reading operators.
    return " | ".join(f"'{t}'" for t in toks)


class PostgresSearch:
    def search(self, query: str, k: int = 3) -> list[DocRecord]:
        tsq = _tsquery(query or "")
        if not tsq:
            return []
        sql = """
            SELECT slug, title, body, lang, COALESCE(flags->>'fault', '')
            FROM runs_document, to_tsquery('simple', %s) q
            WHERE to_tsvector('simple', search_tokens) @@ q
            ORDER BY ts_rank_cd(to_tsvector('simple', search_tokens), q) DESC, slug
            LIMIT %s
        """
        with connection.cursor() as cur:
            cur.execute(sql, [tsq, k])
            rows = cur.fetchall()
        return [DocRecord(slug=r[0], title=r[1], body=r[2], lang=r[3], fault=r[4]) for r in rows]

