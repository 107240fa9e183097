"""What a step is found by: its search document and the query that matches it.

Pure (no Django): the recorder, the bulk writers and the backfill build a
step's document here, and the run list builds its query here, so both sides
tokenise alike (tracing.core.normalize.search_tokens: words lower-cased, CJK runs as
character bigrams — Postgres has no Chinese parser, so the `simple`
configuration indexes what we segment ourselves).

The document is a tsvector literal: unique tokens separated by spaces. Tokens
are letters, digits and CJK only, so the literal needs no quoting and can go
through COPY or a `::tsvector` cast as is, without to_tsvector's parser.
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Any

from tracing.core.normalize import search_token_set, search_tokens

# Characters of each field read for the index: a 1 MB observation is indexed
# by its first 100,000 characters (its full text is still stored and shown).
# Tokenising is most of the write-path cost (bench/search.py), and a tsvector
# cannot exceed 1 MB.
MAX_INDEXED_CHARS = 100_000
# Unique tokens kept per step: bounds the tsvector and its GIN entries for
# huge observations; 4,000 distinct words is already a long document.
MAX_INDEXED_TOKENS = 4_000
# Query tokens joined with AND: a pasted paragraph is cut to its first words.
MAX_QUERY_TOKENS = 8


def _args_text(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    return json.dumps(args, ensure_ascii=False, default=str)


def step_document(text: str | None, tool: str | None = None, args: Any = None) -> str:
    """The step's tsvector literal (may be empty): text, tool name and arguments."""
    parts = [(text or "")[:MAX_INDEXED_CHARS], tool or "", _args_text(args)[:MAX_INDEXED_CHARS]]
    found = [toks for part in parts if part and (toks := search_token_set(part))]
    # Most steps have one field with words (a thought, an observation): its
    # token list is already unique, no merge needed (bulk writes call this per row).
    toks = found[0] if len(found) == 1 else list(dict.fromkeys(chain.from_iterable(found)))
    return " ".join(toks[:MAX_INDEXED_TOKENS])


def query_tokens(query: str) -> list[str]:
    """The query's unique tokens, at most MAX_QUERY_TOKENS."""
    return list(dict.fromkeys(search_tokens(query)))[:MAX_QUERY_TOKENS]


def tsquery_literal(tokens: list[str]) -> str:
    """Every token must occur in the step (AND): "timeout report" finds the
    step that says both, and a Chinese word is the AND of its bigrams."""
    return " & ".join(f"'{t}'" for t in tokens)


def substring_patterns(tokens: list[str]) -> list[str]:
    """LIKE patterns for steps not yet indexed (search IS NULL): each token
    anywhere in the step's lower-cased NFKC text. Tokens are letters, digits
    and CJK only, so none holds a LIKE wildcard. A superset of the tsvector's
    match (a word inside a longer one matches too; a CJK bigram exactly), so
    a step just written is not missed, at most found by more until the
    indexer reaches it a few seconds later (the exceptions: where Postgres
    spells the text otherwise than Python, lower() of a few letters such as
    İ, jsonb's digits of a JSON number)."""
    return [f"%{t}%" for t in tokens]


# Characters of context shown on each side of the first hit.
SNIPPET_CONTEXT = 70


def snippet(text: str, tokens: list[str]) -> tuple[str, str, str] | None:
    """(before, hit, after) around the earliest query token in `text`, or None
    when no token occurs literally (e.g. full-width digits matched after NFKC).
    Three plain strings: the page escapes each and marks the middle one."""
    if not text or not tokens:
        return None
    lower = text.lower()
    found = [(pos, tok) for tok in tokens if (pos := lower.find(tok)) >= 0]
    if not found:
        return None
    pos, tok = min(found)
    end = pos + len(tok)
    start = max(0, pos - SNIPPET_CONTEXT)
    stop = min(len(text), end + SNIPPET_CONTEXT)
    before = ("…" if start else "") + text[start:pos]
    after = text[end:stop] + ("…" if stop < len(text) else "")
    return before, text[pos:end], after
