"""The run list's search box: runs by an id they are known by, or by any text
in their steps (thoughts, arguments, observations, final answers).

Text search reads the steps' `search` column (tracing.core.stepsearch: words and
CJK bigrams as a tsvector, GIN-indexed), and the raw text of the few steps
written in the last seconds that the indexer has not reached yet
(tracing.store.step_queries). The list asks "runs, newest first,
that have a step matching" as an EXISTS: for a common word Postgres walks the
runs newest first and stops after a page; for a rare one it reads the few
matching steps from the GIN index (bench/search.py has both plans).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, QuerySet

from runs.core.models import Run
from tracing.core.stepsearch import query_tokens, snippet
from tracing.store.models import ExternalRun
from tracing.store.step_queries import first_matching_steps, matching_steps

# A run id typed as "123" or "#123".
_RUN_ID_RE = re.compile(r"#?(\d{1,18})")
# Longest external id / trace id looked up (the columns are 200 characters).
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class StepHit:
    """The first step of a run that matched: where to link and what to show."""

    index: int
    kind: str
    before: str
    hit: str
    after: str


def runs_by_id(qs: QuerySet[Run], q: str) -> QuerySet[Run] | None:
    """Runs the query names exactly — run id, OTLP trace id, a client's
    external id, an imported run's id in its file — or None if it names none.
    One UNION of index lookups (an OR across the join would scan every run)."""
    q = q.strip()
    if not q or len(q) > MAX_ID_CHARS:
        return None
    lookups = [qs.filter(source_run_id=q).values("pk"),
               ExternalRun.objects.filter(external_id=q).values("run_id")]
    if m := _RUN_ID_RE.fullmatch(q):
        lookups.append(qs.filter(pk=int(m.group(1))).values("pk"))
    ids = list(lookups[0].union(*lookups[1:]).values_list("pk", flat=True))
    return qs.filter(pk__in=ids) if ids else None


def runs_with_text(qs: QuerySet[Run], tokens: list[str]) -> QuerySet[Run]:
    """Runs with a step containing every token (none when the query has no token)."""
    if not tokens:
        return qs.none()
    return qs.filter(Exists(matching_steps(tokens).filter(run_id=OuterRef("pk"))))


def first_hits(run_ids: list[int], tokens: list[str]) -> dict[int, StepHit]:
    """The first matching step of each run, one query for the page."""
    if not run_ids or not tokens:
        return {}
    steps = first_matching_steps(run_ids, tokens).only(
        "run_id", "index", "kind", "text", "tool", "args")
    hits = {}
    for step in steps:
        parts = (snippet(step.text, tokens) or snippet(step.args_display, tokens) or snippet(step.tool, tokens)
                 or ("", "", (step.text or step.args_display)[:2 * 70]))
        hits[step.run_id] = StepHit(step.index, step.kind, *parts)
    return hits


@dataclass
class RunSearch:
    """The list's search, applied: what it matched on, and the tokens it used."""

    query: str = ""
    by_id: bool = False
    tokens: tuple[str, ...] = ()

    def attach_hits(self, runs: list[Run]) -> None:
        """Each run of the page gets `.hit`, its first matching step (one query)."""
        hits = first_hits([r.pk for r in runs], list(self.tokens)) if self.tokens else {}
        for run in runs:
            run.hit = hits.get(run.pk)


def search_runs(qs: QuerySet[Run], query: str, *, text_only: bool = False) -> tuple[QuerySet[Run], RunSearch]:
    """`qs` narrowed by the search box: the runs an id names, else (or with
    `text_only`) the runs whose steps contain the text."""
    query = query.strip()
    if not query:
        return qs, RunSearch()
    if not text_only and (named := runs_by_id(qs, query)) is not None:
        return named, RunSearch(query=query, by_id=True)
    tokens = query_tokens(query)
    return runs_with_text(qs, tokens), RunSearch(query=query, tokens=tuple(tokens))
