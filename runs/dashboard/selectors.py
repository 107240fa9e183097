"""Dashboard aggregates: read from the per-run summary columns only (never a
scan of the steps table), whatever the filters."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from runs.core.models import Run
from runs.core.prices import PriceTable
from runs.launch.selectors import POLICY_OFF
from runs.reviews.models import LabelState, ReviewItem
from tracing.core.metrics import pass_at_k, pass_hat_k

# pass^k and pass@k on the dashboard use this k (or n when a group has fewer runs).
DASHBOARD_K = 3
# Step-count histogram: one bar per step count up to this, then one bar for the rest.
HISTOGRAM_MAX = 60
# Groups shown per "by task / model / policy" table.
MAX_GROUPS = 50
# The period shown when none is asked for.
DEFAULT_DAYS = 30


def default_period() -> tuple[date, date]:
    """The last 30 days, today included."""
    today = timezone.now().date()
    return today - timedelta(days=DEFAULT_DAYS), today


# The per-run columns the dashboard reads, in the order of the subquery.
_COLUMNS = ("step_count", "success", "stopped_by", "intervention_count", "first_anchor_break", "prompt_tokens",
            "completion_tokens", "latency_ms", "created_at", "model_name", "task__slug", "policy__name")
_ALIASES = ("steps", "success", "stopped_by", "interventions", "anchor_break", "ptok", "ctok", "latency", "created_at",
            "model", "task", "policy")

# One scan of the filtered runs for every figure but the intervention counts:
# GROUPING SETS computes the totals, the histogram, the days and the three
# group tables together (eight separate aggregates cost eight scans).
_AGGREGATE_SQL = """
SELECT GROUPING(day, steps, task, model, policy) AS gset, day, steps, task, model, policy,
       count(*) AS runs,
       count(success) AS scored,
       count(*) FILTER (WHERE success) AS successes,
       count(*) FILTER (WHERE stopped_by = 'max_steps') AS over_max,
       count(*) FILTER (WHERE interventions > 0) AS interrupted,
       count(*) FILTER (WHERE anchor_break IS NOT NULL) AS anchor_breaks,
       avg(steps) AS mean_steps,
       percentile_disc(0.95) WITHIN GROUP (ORDER BY steps) AS p95_steps,
       sum(steps) AS total_steps,
       sum(ptok + ctok) AS tokens,
       sum(latency) AS latency_ms
FROM (SELECT *, (created_at AT TIME ZONE 'UTC')::date AS day FROM ({inner}) AS r({aliases})) AS s
GROUP BY GROUPING SETS ((), (day), (steps), (task), (model), (policy))
"""

# GROUPING(day, steps, task, model, policy) bit masks: a 0 bit = grouped by it.
_SETS = {0b11111: "all", 0b01111: "day", 0b10111: "steps", 0b11011: "task", 0b11101: "model", 0b11110: "policy"}


def _rate(n: int | None, d: int | None) -> float | None:
    return (n or 0) / d if d else None


def aggregate(qs: QuerySet[Run]) -> dict[str, Any]:
    inner, params = qs.values_list(*_COLUMNS).query.sql_with_params()
    sql = _AGGREGATE_SQL.format(inner=inner, aliases=", ".join(_ALIASES))
    with connection.cursor() as cur:
        cur.execute(sql, params)
        names = [c.name for c in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    return shape(rows)


def shape(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The page's figures from the rows of the grouping sets (from the runs
    here, from the rollups in runs.dashboard.rollup_figures)."""
    out: dict[str, Any] = {"totals": None, "histogram": [], "over_time": [], "by_task": [], "by_model": [],
                           "by_policy": []}
    hist: dict[int, int] = {}
    for row in rows:
        kind = _SETS.get(row["gset"])
        if kind != "all":
            row.pop("p95_steps", None)  # only the totals show a P95
        if kind == "all":
            out["totals"] = _totals(row)
        elif kind == "steps":
            key = min(row["steps"], HISTOGRAM_MAX)
            hist[key] = hist.get(key, 0) + row["runs"]
        elif kind == "day":
            out["over_time"].append({**row, "success_rate": _rate(row["successes"], row["scored"]),
                                     "over_max_rate": _rate(row["over_max"], row["runs"])})
        elif kind in ("task", "model", "policy"):
            # A group without a value: runs without a watchdog are policy "off"
            # (the run list's value for them), runs of a typed prompt have no task.
            key, drill = row[kind], row[kind]
            if key is None:
                key, drill = {"policy": (_("%(off)s (no watchdog)") % {"off": POLICY_OFF}, POLICY_OFF),
                              "task": ("free prompt", "")}.get(kind, ("—", ""))
            out[f"by_{kind}"].append({**group(row, key), "drill": drill})
    if out["totals"] is None:  # no runs at all: GROUPING SETS yields no row
        out["totals"] = _totals({"runs": 0, "scored": 0, "successes": 0, "over_max": 0, "interrupted": 0,
                                 "anchor_breaks": 0, "mean_steps": None, "p95_steps": None, "total_steps": 0,
                                 "tokens": 0, "latency_ms": 0})
    out["histogram"] = sorted(hist.items())
    out["over_time"].sort(key=lambda r: r["day"])
    for key in ("by_task", "by_model", "by_policy"):
        # Ties in a stable order (the grouping sets come in any order).
        out[key] = sorted(out[key], key=lambda g: (-g["runs"], str(g["key"])))[:MAX_GROUPS]
    return out


def _totals(row: dict[str, Any]) -> dict[str, Any]:
    runs, steps = row["runs"], row["total_steps"] or 0
    return {
        **row,
        "steps": steps,
        "success_rate": _rate(row["successes"], row["scored"]),
        "over_max_rate": _rate(row["over_max"], runs),
        "interrupted_rate": _rate(row["interrupted"], runs),
        "anchor_break_rate": _rate(row["anchor_breaks"], runs),
        "tokens_per_run": _rate(row["tokens"], runs),
        "tokens_per_step": _rate(row["tokens"], steps),
        "latency_per_run_ms": _rate(row["latency_ms"], runs),
        "latency_per_step_ms": _rate(row["latency_ms"], steps),
    }


def group(row: dict[str, Any], key: Any) -> dict[str, Any]:
    n, c = row["scored"], row["successes"]
    k = min(DASHBOARD_K, n)
    return {
        **row,
        "key": key,
        "success_rate": _rate(c, n),
        "k": k,
        "pass_at_k": pass_at_k(n, c, k) if n else None,
        "pass_hat_k": pass_hat_k(n, c, k) if n else None,
    }


def cost_rows(qs: QuerySet[Run]) -> list[dict[str, Any]]:
    """Tokens per task, model, provider and policy: a second, narrow scan of the
    runs, kept apart from `aggregate` so its grouping sets stay as they are."""
    return list(qs.order_by().values("task__slug", "model_name", "provider", "policy__name")
                .annotate(ptok=Sum("prompt_tokens"), ctok=Sum("completion_tokens")))


_COST_KEY = ("task__slug", "model_name", "provider", "policy__name")


def costs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Cost in all and per task, model and policy from `cost_rows`: tokens summed
    per model (a price is per model), priced with one read of the table."""
    table = PriceTable.load()
    out: dict[str, Any] = {"total": 0.0, "task": {}, "model": {}, "policy": {}}
    # Summed in one order whatever order the rows came in, so a cost is the
    # same to the last digit however it was read (the rollups or the runs).
    for row in sorted(rows, key=lambda r: tuple(str(r[k]) for k in _COST_KEY)):
        cost = table.price_for(row["provider"], row["model_name"]).cost(row["ptok"] or 0, row["ctok"] or 0)
        out["total"] += cost
        for kind, key in (("task", row["task__slug"]), ("model", row["model_name"]), ("policy", row["policy__name"])):
            out[kind][key] = out[kind].get(key, 0.0) + cost
    return out


def add_costs(data: dict[str, Any], cost: dict[str, Any]) -> None:
    """Put each group's cost beside its other figures."""
    data["totals"]["cost"] = cost["total"]
    data["totals"]["cost_per_run"] = _rate(cost["total"], data["totals"]["runs"])
    for kind in ("task", "model", "policy"):
        for group in data[f"by_{kind}"]:
            group["cost"] = cost[kind].get(group[kind], 0.0)  # the group's raw value (None: no task / policy)


# Context pressure is charted up to this step index (later steps are rare
# and would flatten the curve of the common case).
CONTEXT_MAX_STEP = 100


def array_figures(qs: QuerySet[Run]) -> dict[str, list]:
    """One scan of the per-run arrays: runs with an intervention of each detector
    and of each tier, mean prompt size per step index (context pressure) and
    observations truncated per step index."""
    inner, params = qs.values_list("intervention_detectors", "intervention_tiers", "context_steps", "context_tokens",
                                   "truncated_steps").query.sql_with_params()
    sql = (
        f"SELECT u.kind, u.k, count(*), avg(u.v) FROM ({inner}) AS s(detectors, tiers, csteps, ctokens, truncated) "
        "CROSS JOIN LATERAL ("
        "SELECT 'detector' AS kind, d AS k, NULL::float AS v FROM unnest(s.detectors) d "
        "UNION ALL SELECT 'tier', t, NULL FROM unnest(s.tiers) t "
        "UNION ALL SELECT 'context', c.step::text, c.tok::float FROM unnest(s.csteps, s.ctokens) c(step, tok) "
        f"  WHERE c.step <= {CONTEXT_MAX_STEP} "
        f"UNION ALL SELECT 'truncated', x::text, NULL FROM unnest(s.truncated) x WHERE x <= {CONTEXT_MAX_STEP}"
        ") u GROUP BY u.kind, u.k"
    )
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()

    def ranked(kind: str) -> list[tuple[str, int]]:
        return sorted(((k, n) for kd, k, n, _ in rows if kd == kind), key=lambda r: (-r[1], r[0]))

    return {
        "detectors": ranked("detector"),
        "tiers": ranked("tier"),
        "context": sorted((int(k), float(v), n) for kd, k, n, v in rows if kd == "context"),
        "truncated": sorted((int(k), n) for kd, k, n, _ in rows if kd == "truncated"),
    }


def false_kills(qs: QuerySet[Run]) -> list[dict[str, Any]]:
    """Per detector: reviewers' labels of its interruptions and the false-kill rate."""
    rows = (
        ReviewItem.objects.filter(run__in=qs.values("id"))
        .values("detector")
        .annotate(
            justified=Count("id", filter=Q(label=LabelState.JUSTIFIED)),
            wrongly=Count("id", filter=Q(label=LabelState.WRONGLY_KILLED)),
            items=Count("id"),
        )
        .order_by("detector")
    )
    return [{**r, "labelled": r["justified"] + r["wrongly"],
             "false_kill_rate": _rate(r["wrongly"], r["justified"] + r["wrongly"])} for r in rows]


# Runs per tag: a run counts once under each of its tags (unnest), so the
# rows do not add up to the total, as tags overlap.
_BY_TAG_SQL = """
SELECT tag, count(*) AS runs, count(success) AS scored, count(*) FILTER (WHERE success) AS successes,
       avg(steps) AS mean_steps, count(*) FILTER (WHERE stopped_by = 'max_steps') AS over_max
FROM ({inner}) AS r(tags, success, steps, stopped_by), unnest(r.tags) AS tag
GROUP BY tag ORDER BY runs DESC, tag LIMIT %s
"""


def by_tag(qs: QuerySet[Run]) -> list[dict[str, Any]]:
    """The "by tag" table: success, pass@k / pass^k and steps of the runs carrying each tag."""
    inner, params = qs.values_list("tags", "success", "step_count", "stopped_by").query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute(_BY_TAG_SQL.format(inner=inner), [*params, MAX_GROUPS])
        names = [c.name for c in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    return [{**group(row, row["tag"]), "drill": row["tag"]} for row in rows]
