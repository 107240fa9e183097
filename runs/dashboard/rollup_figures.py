"""The dashboard's figures read from the per-day rollups (runs.dashboard.models):
sums over the period's rows, a few thousand at most, whatever the number of
runs. The same figures as runs.dashboard.selectors computes from the runs
(tests/runs/dashboard/test_rollups.py holds them equal); the step count's P95
comes from the rollups' per-step-count buckets, which makes it exact.

Filters a rollup row does not keep (a tag, metadata, a session) cannot be
served here: `serves` says so and the page reads the runs instead.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from django.db import connection

from runs.dashboard import selectors
from runs.launch.selectors import POLICY_OFF, RunFilters

# The filters a rollup row can answer (its key, its day); `finished` and
# `forks` are what every rollup row is already (ended runs, no forks).
SERVED = {"since", "until", "task", "model", "mode", "policy"}
_IMPLIED = {"finished": True, "forks": "no"}

_ROWS = """
SELECT r.day, t.slug AS task, r.model_name AS model, r.provider, p.name AS policy, r.runs, r.scored, r.successes,
       r.over_max, r.interrupted, r.anchor_breaks, r.steps, r.prompt_tokens, r.completion_tokens, r.latency_ms,
       r.counts
FROM runs_dayrollup r LEFT JOIN runs_task t ON t.id = r.task_id LEFT JOIN runs_policy p ON p.id = r.policy_id
WHERE {where}
"""

# The figures of runs.dashboard.selectors._AGGREGATE_SQL summed over rollup
# rows, with the same GROUPING bits (steps is never grouped by here: the step
# histogram is in the counts), and the tokens per (task, model, provider,
# policy) the costs are priced from (by_cost = 0). Averages are numeric sum /
# numeric count, which is what Postgres' avg(integer) computes; counts are 0
# over no rows, as count(*) is.
_AGGREGATE_SQL = """
SELECT ((GROUPING(day, task, model, policy) & 8) << 1) | 8 | (GROUPING(day, task, model, policy) & 7) AS gset,
       GROUPING(provider) AS by_cost, day, NULL::int AS steps, task, model, provider, policy,
       coalesce(sum(runs), 0)::bigint AS runs, coalesce(sum(scored), 0)::bigint AS scored,
       coalesce(sum(successes), 0)::bigint AS successes, coalesce(sum(over_max), 0)::bigint AS over_max,
       coalesce(sum(interrupted), 0)::bigint AS interrupted, coalesce(sum(anchor_breaks), 0)::bigint AS anchor_breaks,
       sum(steps)::numeric / sum(runs)::numeric AS mean_steps, NULL::int AS p95_steps,
       sum(steps)::bigint AS total_steps, sum(prompt_tokens + completion_tokens)::numeric AS tokens,
       sum(latency_ms) AS latency_ms, sum(prompt_tokens)::bigint AS ptok, sum(completion_tokens)::bigint AS ctok
FROM ({rows}) AS s
GROUP BY GROUPING SETS ((), (day), (task), (model), (policy), (task, model, provider, policy))
"""

# The counts summed over the period in one pass over them, as (kind, name, n);
# the tags' five counts become the "by tag" rows (runs.dashboard.selectors._BY_TAG_SQL's
# figures, in its order: rank).
_COUNTS_SQL = """
WITH sums AS MATERIALIZED (
    SELECT e.key, sum(e.value::bigint) AS n FROM ({rows}) AS s, jsonb_each_text(s.counts) AS e GROUP BY e.key
), tagged AS (
    SELECT split_part(key, ':', 1) AS kind, substr(key, strpos(key, ':') + 1) AS name, n FROM sums WHERE key LIKE 'g%%'
), tags AS (
    SELECT name, sum(n) FILTER (WHERE kind = 'g')::bigint AS runs,
           coalesce(sum(n) FILTER (WHERE kind = 'gs'), 0)::bigint AS scored,
           coalesce(sum(n) FILTER (WHERE kind = 'gc'), 0)::bigint AS successes,
           coalesce(sum(n) FILTER (WHERE kind = 'gt'), 0) / sum(n) FILTER (WHERE kind = 'g') AS mean_steps,
           coalesce(sum(n) FILTER (WHERE kind = 'go'), 0)::bigint AS over_max
    FROM tagged GROUP BY name
)
SELECT split_part(key, ':', 1) AS kind, substr(key, strpos(key, ':') + 1) AS name, n, NULL::bigint AS scored,
       NULL::bigint AS successes, NULL::numeric AS mean_steps, NULL::bigint AS over_max, NULL::bigint AS rank
FROM sums WHERE key NOT LIKE 'g%%'
UNION ALL
SELECT 'tag', name, runs, scored, successes, mean_steps, over_max, row_number() OVER (ORDER BY runs DESC, name)
FROM tags
"""


def serves(f: RunFilters) -> bool:
    """Whether the rollups answer these filters (else the runs are read)."""
    default = RunFilters()
    for field in fields(RunFilters):
        value = getattr(f, field.name)
        if field.name in _IMPLIED:
            if value != _IMPLIED[field.name]:
                return False
        elif field.name not in SERVED and value != getattr(default, field.name):
            return False
    return True


def unserved(f: RunFilters) -> list[str]:
    """The filters set that the rollups cannot answer (the page names them)."""
    default = RunFilters()
    return [field.name for field in fields(RunFilters)
            if field.name not in SERVED and field.name not in _IMPLIED
            and getattr(f, field.name) != getattr(default, field.name)]


# The day's counts of every run of the project: what an unfiltered page's counts are read from.
_DAY_COUNTS = "SELECT r.counts FROM runs_daycounts r WHERE {where}"


def _period(project_id: int, f: RunFilters) -> tuple[list[str], list[Any]]:
    where, params = ["r.project_id = %s"], [project_id]
    if f.since:
        where.append("r.day >= %s")
        params.append(f.since)
    if f.until:
        where.append("r.day <= %s")
        params.append(f.until)
    return where, params


def _rows(project_id: int, f: RunFilters) -> tuple[str, list[Any]]:
    where, params = _period(project_id, f)
    for column, value in (("t.slug", f.task), ("r.model_name", f.model), ("r.mode", f.mode)):
        if value:
            where.append(f"{column} = %s")
            params.append(value)
    if f.policy == POLICY_OFF:
        where.append("r.policy_id IS NULL")
    elif f.policy:
        where.append("p.name = %s")
        params.append(f.policy)
    return _ROWS.format(where=" AND ".join(where)), params


def _counted_rows(project_id: int, f: RunFilters) -> tuple[str, list[Any]]:
    """The rows whose counts hold the period's: the days' (DayCounts) when no
    task, model, mode or policy narrows them, else the rollup rows that match."""
    if f.task or f.model or f.mode or f.policy:
        return _rows(project_id, f)
    where, params = _period(project_id, f)
    return _DAY_COUNTS.format(where=" AND ".join(where)), params


def _fetch(sql: str, params: list[Any]) -> list[dict[str, Any]]:
    with connection.cursor() as cur:
        cur.execute(sql, params)
        names = [c.name for c in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def percentile_disc(histogram: dict[int, int], fraction: float) -> int | None:
    """Postgres' percentile_disc over the values a histogram counts: the first
    value whose cumulative count reaches ceil(fraction × n)."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return value
    return None


# Columns of the sums that only the costs read, and the figures of a "by tag" row.
_COST_ONLY = {"by_cost", "provider", "ptok", "ctok"}
_TAG_FIGURES = ("scored", "successes", "mean_steps", "over_max")


def _ranked(counts: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted(((k, int(n)) for k, n in counts.items()), key=lambda r: (-r[1], r[0]))


def figures(project_id: int | None, f: RunFilters) -> dict[str, Any]:
    """What the page shows from the runs (the selectors' aggregate,
    array_figures, by_tag and cost_rows), read from the rollups instead, and
    `layer_guesses` (failed runs per guessed layer, None: no guess) for the
    failures' breakdown. Two queries over the period's rollup rows."""
    if project_id is None:
        project_id = 0  # a user in no project sees no runs: no rollup row has project 0
    rows_sql, params = _rows(project_id, f)
    sums = _fetch(_AGGREGATE_SQL.format(rows=rows_sql), params)
    counts: dict[str, dict[str, Any]] = {}
    tags = []
    counted_sql, counted_params = _counted_rows(project_id, f)
    for row in _fetch(_COUNTS_SQL.format(rows=counted_sql), counted_params):
        if row["kind"] == "tag":
            tags.append(row)
        else:
            counts.setdefault(row["kind"], {})[row["name"]] = row["n"]
    hist = {int(k): int(n) for k, n in counts.get("h", {}).items()}
    rows = [{k: v for k, v in row.items() if k not in _COST_ONLY} for row in sums if row["by_cost"]]
    for row in rows:
        if row["gset"] == 0b11111:
            row["p95_steps"] = percentile_disc(hist, 0.95)
    data = selectors.shape(rows + [{"gset": 0b10111, "steps": s, "runs": n} for s, n in hist.items()])
    turns, tokens = counts.get("c", {}), counts.get("k", {})
    data.update({
        "detectors": _ranked(counts.get("d", {})),
        "tiers": _ranked(counts.get("i", {})),
        # avg(tokens) of the runs' query: a sum of whole numbers over their count, one float division.
        "context": sorted((int(k), int(tokens.get(k, 0)) / int(n), int(n)) for k, n in turns.items()),
        "truncated": sorted((int(k), int(n)) for k, n in counts.get("x", {}).items()),
        "by_tag": [{**selectors.group({"tag": row["name"], "runs": int(row["n"]), **{k: row[k] for k in _TAG_FIGURES}}, row["name"]),
                    "drill": row["name"]} for row in sorted(tags, key=lambda r: r["rank"])[:selectors.MAX_GROUPS]],
        "cost_rows": [{"task__slug": r["task"], "model_name": r["model"], "provider": r["provider"],
                       "policy__name": r["policy"], "ptok": r["ptok"], "ctok": r["ctok"]}
                      for r in sums if not r["by_cost"]],
        "layer_guesses": {(k or None): int(n) for k, n in counts.get("l", {}).items()},
    })
    return data
