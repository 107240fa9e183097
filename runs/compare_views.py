"""Compare reruns side by side (issue 6): aligned grid, first divergence, pass@k / pass^k.

The selection lives in the URL (``/compare/?runs=1,2,3``, ``/compare/group/7/``)
so a comparison can be shared. The alignment and the metrics are the pure
modules ``tracing.alignment`` and ``tracing.metrics``; this module loads the
rows (a constant number of queries whatever the number of runs), shapes them
for the templates and builds the plotly figures.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Left
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.models import RerunGroup, Run
from tracing.alignment import MAX_RUNS, AlignedGrid, align, align_runs, same_action, similarity
from tracing.metrics import RunStats, summarize_tasks
from tracing.models import Step

# Grid cells show an action's label only; the full text arrives with the htmx
# expansion. Text matters to the alignment only for actions without arguments
# (text mode) and finals, whose first few hundred characters are enough, and
# capping it keeps 50 x 200 observations from hauling megabytes out of Postgres.
GRID_TEXT_CHARS = 300
# One expanded cell is one action unit (a few steps); the cap only guards
# against a pathological unit of a run that never acted.
CELL_MAX_STEPS = 200
# The live comparison re-renders the whole grid, which costs more than the run
# page's step poll: every 2 s keeps it live without hammering the server.
POLL_EVERY = "2s"
# Grid column widths (rem), mirrored in static/compare.css: a column fits a
# clamped action label; 6 runs fit at 1280 px, the rest scroll sideways.
GRID_COLUMN_REM = 11.5
GRID_ROW_HEAD_REM = 3.2
# Settings a comparison can be grouped by (runs of one task under different
# models / watchdog policies / agent modes).
GROUP_BY = ("model", "policy", "mode")

_ID = re.compile(r"\d{1,18}")


class SelectionError(Exception):
    """A selection the page refuses; the message is shown to the user as is."""


@dataclass(slots=True)
class GridStep:
    """The columns of a step the grid needs (duck-typed for tracing.alignment)."""

    index: int
    kind: str
    text: str
    tool: str
    args: Any
    status: str | None  # observation status (meta.status)
    tier: str | None  # intervention tier (meta.tier)


@dataclass(slots=True)
class Cell:
    kind: str  # the unit's kind, or "gap" / "ended"
    run: int  # run id
    label: str = ""
    # Built here rather than in the template: thousands of cells, and every
    # template variable costs a lookup and a localisation.
    href: str = ""  # the unit's first step on the run page (no-JS fallback)
    hx: str = ""  # the htmx expansion
    key: str = ""  # row-run, pairs a cell with its open expansion
    first: int | None = None
    last: int | None = None
    steps: int = 0
    # The run did something else than the row's most common action.
    minority: bool = False
    bad_status: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()


@dataclass(slots=True)
class Row:
    number: int  # 1-based, as shown
    agreement: float
    pct: int  # agreement in whole percent, for display
    first_divergence: bool
    cells: list[Cell]


@dataclass
class Column:
    run: Run
    setting: str
    url: str
    diff_against: int | None = None  # the first column's run, for the header's diff link


@dataclass
class SettingSummary:
    name: str
    runs: int
    scored: int
    successes: int
    success_rate: float | None
    pass_at_n: float | None
    pass_hat_n: float | None
    steps_mean: float | None
    steps_p95: float | None
    tokens_mean: float | None
    span: int = 0  # columns of the grid under this setting


# Run ids listed by name in a branch of the divergence; the rest are counted
# (with 50 runs, "(gap) <- 44 runs" reads better than 44 ids).
BRANCH_IDS_SHOWN = 8


@dataclass
class BranchView:
    label: str
    runs: list[int]  # run ids
    gap: bool

    @property
    def shown(self) -> list[int]:
        return self.runs[:BRANCH_IDS_SHOWN]

    @property
    def more(self) -> int:
        return max(0, len(self.runs) - BRANCH_IDS_SHOWN)

    @property
    def all_ids(self) -> str:
        return " ".join(f"#{pk}" for pk in self.runs)


@dataclass
class Chart:
    id: str
    title: str
    figure: dict = field(repr=False)


# ---------------------------------------------------------------------------
# Loading


def parse_run_ids(values: list[str]) -> list[int]:
    """Run ids from ``runs=1,2,3`` and/or repeated ``runs=`` params, in order, deduplicated.

    Raises SelectionError for a non-numeric id, an empty selection or more than MAX_RUNS.
    """
    ids: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not _ID.fullmatch(part):
                raise SelectionError(f"'{part[:40]}' is not a run id: use numbers, e.g. ?runs=1,2,3.")
            ids.append(int(part))
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise SelectionError("No runs selected: tick runs on the run list, or use ?runs=1,2,3.")
    if len(ids) > MAX_RUNS:
        raise SelectionError(
            f"At most {MAX_RUNS} runs can be compared at once; this selection has {len(ids)}. "
            "Narrow it (filter the run list by task or model) and compare again."
        )
    return ids


def _runs_by_id(request: HttpRequest, ids: list[int]) -> list[Run]:
    found = {r.pk: r for r in Run.objects.for_user(request.user).select_related("task", "policy").filter(pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10])
        raise SelectionError(f"No such run: {shown}. Pick runs from the run list.")
    return [found[i] for i in ids]


def _grid_steps(run_ids: list[int]) -> dict[int, list[GridStep]]:
    """Every selected run's steps in one query, text capped at GRID_TEXT_CHARS."""
    by_run: dict[int, list[GridStep]] = {pk: [] for pk in run_ids}
    rows = (
        Step.objects.filter(run_id__in=run_ids)
        .order_by("run_id", "index")
        .annotate(head=Left("text", GRID_TEXT_CHARS), status=KeyTextTransform("status", "meta"),
                  tier=KeyTextTransform("tier", "meta"))
        .values_list("run_id", "index", "kind", "head", "tool", "args", "status", "tier")
    )
    for run_id, index, kind, head, tool, args, status, tier in rows:
        by_run[run_id].append(GridStep(index, kind, head, tool, args, status, tier))
    return by_run


def _setting(run: Run, by: str) -> str:
    if by == "model":
        return run.model_name if run.provider != Run.Provider.SIM else f"{run.model_name} (simulated)"
    if by == "policy":
        return str(run.policy) if run.policy else "watchdog off"
    if by == "mode":
        return run.mode
    return ""


def _task_key(run: Run) -> str:
    return run.task.slug if run.task else f"prompt: {run.prompt[:40]}"


def _stats(run: Run) -> RunStats:
    return RunStats(
        task=_task_key(run),
        # A live run has no outcome yet: it counts in steps, not in pass@k.
        success=None if run.is_live else run.success,
        steps=run.step_count,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        latency_ms=run.latency_ms,
        hit_max_steps=run.stopped_by == "max_steps",
    )


# ---------------------------------------------------------------------------
# Shaping the grid


def _rows(grid: AlignedGrid, columns: list[Column], cell_url: str) -> list[Row]:
    n_cols = len(columns) + 1
    last_row = [max((r for r, row in enumerate(grid.rows) if row[k] is not None), default=-1)
                for k in range(grid.n_runs)]
    out = []
    for r, units in enumerate(grid.rows):
        majority: set[int] = set()
        if grid.agreement[r] < 1.0 and grid.n_runs > 1:
            branches = [b for b in grid.branches_at(r) if b.unit is not None]
            if branches:
                majority = set(branches[0].runs)
        cells = []
        for k, unit in enumerate(units):
            run_id = columns[k].run.pk
            if unit is None:
                if r <= last_row[k]:
                    cells.append(Cell("gap", run_id))
                else:
                    # Say it once, on the first row after the run's last unit.
                    label = ("(no steps)" if last_row[k] < 0 else "(ended)") if r == last_row[k] + 1 else ""
                    cells.append(Cell("ended", run_id, label=label))
                continue
            first, last = unit.first_index, unit.last_index
            cells.append(Cell(
                kind=unit.kind,
                run=run_id,
                label=unit.label,
                href=f"{columns[k].url}#step-{first}",
                hx=f"{cell_url}?run={run_id}&from={first}&to={last}&cols={n_cols}&row={r + 1}",
                key=f"{r + 1}-{run_id}",
                first=first,
                last=last,
                steps=len(unit.steps),
                minority=bool(majority) and k not in majority,
                bad_status=tuple(s.status for s in unit.steps
                                 if s.kind == "observation" and s.status and s.status != "ok"),
                tiers=tuple(s.tier or "?" for s in unit.steps if s.kind == "intervention"),
            ))
        out.append(Row(r + 1, grid.agreement[r], round(grid.agreement[r] * 100), r == grid.first_divergence, cells))
    return out


def _branches(grid: AlignedGrid, runs: list[Run]) -> list[BranchView]:
    return [BranchView(b.label, [runs[k].pk for k in b.runs], b.unit is None) for b in grid.branches]


def _setting_summaries(columns: list[Column]) -> list[SettingSummary]:
    grouped: dict[str, list[Run]] = {}
    for col in columns:
        grouped.setdefault(col.setting, []).append(col.run)
    out = []
    for name, runs in grouped.items():
        s = summarize_tasks(_stats(r) for r in runs)
        o = s.overall
        out.append(SettingSummary(
            name=name, runs=o.runs, scored=o.scored, successes=o.successes, success_rate=o.success_rate,
            pass_at_n=s.pass_at[-1] if s.pass_at else None, pass_hat_n=s.pass_hat[-1] if s.pass_hat else None,
            steps_mean=o.steps.mean, steps_p95=o.steps.p95, tokens_mean=o.tokens.mean, span=len(runs),
        ))
    return out


def _differing_settings(runs: list[Run]) -> list[tuple[str, int]]:
    out = []
    for by in GROUP_BY:
        distinct = len({_setting(r, by) for r in runs})
        if distinct > 1:
            out.append((by, distinct))
    return out


# ---------------------------------------------------------------------------
# Charts (plotly's Python API -> JSON; static/compare.js draws them)

# The empty "none" template: plotly copies the default template into every new
# figure, which cost ~8 ms a chart; the few looks we want are set directly.
_CHART_LAYOUT = {
    "template": "none",
    "height": 230,
    "margin": {"l": 45, "r": 10, "t": 34, "b": 36},
    "font": {"size": 11, "family": "system-ui, sans-serif", "color": "#1d2330"},
    "paper_bgcolor": "#fff",
    "plot_bgcolor": "#fff",
    "colorway": ["#2456d6", "#a05a00", "#1f7a4d", "#6d4bd1", "#b3261e", "#0b6e99"],
    "showlegend": False,
}
_AXIS = {"gridcolor": "#eceff3", "zeroline": False, "automargin": True}


def _new_figure(**layout):
    import plotly.graph_objects as go

    fig = go.Figure(layout={**_CHART_LAYOUT, **layout})
    fig.update_xaxes(**_AXIS)
    fig.update_yaxes(**_AXIS)
    return fig


def _figure(fig) -> dict:
    return json.loads(fig.to_json())


def _charts(columns: list[Column], grid: AlignedGrid, ks: list[int], pass_at: list[float],
            pass_hat: list[float]) -> list[Chart]:
    import plotly.graph_objects as go

    grouped: dict[str, list[Run]] = {}
    for col in columns:
        grouped.setdefault(col.setting or "all runs", []).append(col.run)
    charts = []
    for key, title, value in (("steps", "Steps per run", lambda r: r.step_count),
                              ("tokens", "Tokens per run", lambda r: r.total_tokens)):
        fig = _new_figure(title={"text": title})
        for name, runs in grouped.items():
            fig.add_trace(go.Box(
                y=[value(r) for r in runs], name=name, boxpoints="all", jitter=0.4, pointpos=0,
                text=[f"run {r.pk}" for r in runs], hovertemplate="%{text}: %{y}<extra></extra>",
            ))
        fig.update_yaxes(rangemode="tozero")
        charts.append(Chart(f"chart-{key}", title, _figure(fig)))
    if ks:
        # The legend sits mid-right, where pass@k (near 1) and pass^k (falling) leave room.
        fig = _new_figure(title={"text": "pass@k (solid) and pass^k (dashed)"}, showlegend=True,
                          legend={"x": 0.98, "xanchor": "right", "y": 0.5, "yanchor": "middle",
                                  "bgcolor": "rgba(255,255,255,0.85)"})
        fig.add_trace(go.Scatter(x=ks, y=pass_at, name="pass@k", mode="lines+markers"))
        fig.add_trace(go.Scatter(x=ks, y=pass_hat, name="pass^k", mode="lines+markers", line={"dash": "dash"}))
        fig.update_yaxes(range=[0, 1.05])
        fig.update_xaxes(title={"text": "k"}, dtick=1 if len(ks) <= 12 else None)
        charts.append(Chart("chart-pass", "pass@k and pass^k", _figure(fig)))
    if grid.rows and grid.n_runs > 1:
        rows = list(range(1, len(grid.rows) + 1))
        # Colour repeats what the grid says in text (row numbers, the ⑂ band).
        colours = ["#b3261e" if r - 1 == grid.first_divergence else ("#c9a227" if a < 1 else "#1f7a4d")
                   for r, a in zip(rows, grid.agreement, strict=True)]
        fig = _new_figure(title={"text": "Agreement per aligned row"})
        fig.add_trace(go.Bar(x=rows, y=grid.agreement, marker={"color": colours},
                             hovertemplate="row %{x}: %{y:.0%} agree<extra></extra>"))
        if grid.first_divergence is not None:
            fig.add_annotation(x=grid.first_divergence + 1, y=1.02, text="first divergence", showarrow=False,
                               yanchor="bottom", font={"color": "#b3261e"})
        fig.update_yaxes(range=[0, 1.15], tickformat=".0%")
        fig.update_xaxes(title={"text": "aligned row"})
        charts.append(Chart("chart-divergence", "Where the runs diverged", _figure(fig)))
    return charts


# ---------------------------------------------------------------------------
# Views


def _error(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return render(request, "runs/compare_error.html", {"message": message}, status=status)


def _compare_context(request: HttpRequest, runs: list[Run], *, group: RerunGroup | None) -> dict:
    by = request.GET.get("by", "")
    if by not in GROUP_BY:
        by = ""
    if by:
        # Columns of one setting side by side; the selection order within each.
        first_seen: dict[str, int] = {}
        for r in runs:
            first_seen.setdefault(_setting(r, by), len(first_seen))
        runs = sorted(runs, key=lambda r: first_seen[_setting(r, by)])
    steps = _grid_steps([r.pk for r in runs])
    grid = align_runs([steps[r.pk] for r in runs])
    columns = [Column(r, _setting(r, by), r.get_absolute_url(), runs[0].pk if k else None)
               for k, r in enumerate(runs)]

    stats = summarize_tasks(_stats(r) for r in runs)
    overall = stats.overall
    ks = list(range(1, len(stats.pass_at) + 1))
    tasks = Counter(_task_key(r) for r in runs)
    live = any(r.is_live for r in runs)
    selection = ",".join(str(r.pk) for r in runs)
    return {
        "group": group,
        "runs": runs,
        "columns": columns,
        "rows": _rows(grid, columns, reverse("compare:cell")),
        "n_cols": len(runs) + 1,
        # An explicit width lets the browser use the fixed table layout: with
        # 50 x 200 the grid has thousands of cells and auto layout measures them all.
        "grid_width": f"{GRID_ROW_HEAD_REM + GRID_COLUMN_REM * len(runs):.1f}rem",
        "first_divergence": None if grid.first_divergence is None else grid.first_divergence + 1,
        "branches": _branches(grid, runs),
        "overall": overall,
        "pass_rows": list(zip(ks, stats.pass_at, stats.pass_hat, stats.tasks_at, strict=True)),
        "tasks": sorted(tasks.items(), key=lambda kv: -kv[1]),
        "several_tasks": len(tasks) > 1,
        "empty_runs": [r.pk for r in runs if not steps[r.pk]],
        "live": live,
        "live_count": sum(r.is_live for r in runs),
        "poll_every": POLL_EVERY,
        "poll_url": request.get_full_path(),
        "by": by,
        "group_by": GROUP_BY,
        "differing": _differing_settings(runs) if not by else [],
        "settings": _setting_summaries(columns) if by else [],
        "charts": _charts(columns, grid, ks, list(stats.pass_at), list(stats.pass_hat)),
        "selection": selection,
        "base_url": request.path,
        "cell_url": reverse("compare:cell"),
        "diff_url": reverse("compare:diff"),
    }


def _render_compare(request: HttpRequest, runs: list[Run], *, group: RerunGroup | None = None) -> HttpResponse:
    context = _compare_context(request, runs, group=group)
    if request.htmx:
        response = render(request, "runs/_compare_body.html", context)
        if not context["live"]:
            # The poll's last answer: htmx swaps it in and stops polling.
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "runs/compare.html", context)


@login_required
@require_GET
def compare_runs(request: HttpRequest) -> HttpResponse:
    try:
        ids = parse_run_ids(request.GET.getlist("runs"))
        runs = _runs_by_id(request, ids)
    except SelectionError as exc:
        return _error(request, str(exc))
    return _render_compare(request, runs)


@login_required
@require_GET
def compare_group(request: HttpRequest, group_id: int) -> HttpResponse:
    group = get_object_or_404(RerunGroup, pk=group_id)
    runs = list(Run.objects.for_user(request.user).select_related("task", "policy")
                .filter(group=group).order_by("created_at", "id")[: MAX_RUNS + 1])
    if len(runs) > MAX_RUNS:
        return _error(request, f"This group has more than {MAX_RUNS} runs; at most {MAX_RUNS} can be compared "
                               "at once. Select some of them on the run list instead.")
    return _render_compare(request, runs, group=group)


def _int_param(request: HttpRequest, name: str, *, required: bool = True, default: int = 0) -> int:
    raw = request.GET.get(name, "")
    if not raw and not required:
        return default
    if not _ID.fullmatch(raw):
        raise SelectionError(f"{name} must be a non-negative integer, got '{raw[:40]}'.")
    return int(raw)


@login_required
@require_GET
def compare_cell(request: HttpRequest) -> HttpResponse:
    """The steps of one grid cell (one action unit), as a full-width row under its grid row."""
    try:
        run_id = _int_param(request, "run")
        first = _int_param(request, "from")
        last = _int_param(request, "to")
        cols = min(_int_param(request, "cols", required=False, default=2), MAX_RUNS + 1)
        row = _int_param(request, "row", required=False)
    except SelectionError as exc:
        return HttpResponse(str(exc), status=400)
    run = get_object_or_404(Run.objects.for_user(request.user), pk=run_id)
    if not request.htmx:
        # Without htmx the cell is a plain link: show the steps in the run itself.
        return redirect(f"{run.get_absolute_url()}#step-{first}")
    steps = list(Step.objects.filter(run=run, index__gte=first, index__lte=last).order_by("index")[:CELL_MAX_STEPS])
    return render(request, "runs/_compare_cell.html",
                  {"run": run, "steps": steps, "first": first, "last": last, "cols": max(cols, 1), "row": row})


@dataclass
class DiffRow:
    number: int
    a: Any
    b: Any
    relation: str  # same | changed | different | only-a | only-b
    relation_label: str
    similarity: float
    first_divergence: bool


_RELATION_TEXT = {
    "same": "same action",
    "changed": "same tool, other arguments",
    "different": "different action",
    "only-a": "only in A",
    "only-b": "only in B",
}


def _relation(a, b) -> str:
    if a is None:
        return "only-b"
    if b is None:
        return "only-a"
    if same_action(a, b):
        return "same"
    return "changed" if a.key[0] == b.key[0] else "different"


@login_required
@require_GET
def compare_diff(request: HttpRequest) -> HttpResponse:
    """Two runs, aligned, every step shown: the focused diff of two grid columns."""
    try:
        a_id, b_id = _int_param(request, "a"), _int_param(request, "b")
        if a_id == b_id:
            raise SelectionError("Pick two different runs to diff.")
        run_a, run_b = _runs_by_id(request, [a_id, b_id])
    except SelectionError as exc:
        return _error(request, str(exc))
    by_run: dict[int, list[Step]] = {a_id: [], b_id: []}
    for step in Step.objects.filter(run_id__in=[a_id, b_id]).order_by("run_id", "index"):
        by_run[step.run_id].append(step)
    grid = align(by_run[a_id], by_run[b_id])
    rows = []
    for r, (a, b) in enumerate(grid.rows):
        rel = _relation(a, b)
        rows.append(DiffRow(r + 1, a, b, rel, _RELATION_TEXT[rel], similarity(a, b), r == grid.first_divergence))
    counts = Counter(row.relation for row in rows)
    context = {
        "a": run_a,
        "b": run_b,
        "rows": rows,
        "counts": [(_RELATION_TEXT[k], counts.get(k, 0), k) for k in _RELATION_TEXT],
        "first_divergence": None if grid.first_divergence is None else grid.first_divergence + 1,
        "branches": _branches(grid, [run_a, run_b]),
        "back_url": f"{reverse('compare:page')}?runs={a_id},{b_id}",
    }
    return render(request, "runs/compare_diff.html", context)


@login_required
@require_POST
def compare_save(request: HttpRequest) -> HttpResponse:
    """Save a selection as a RerunGroup; the runs move into it (a run has one group)."""
    try:
        ids = parse_run_ids(request.POST.getlist("runs"))
        runs = _runs_by_id(request, ids)
    except SelectionError as exc:
        return _error(request, str(exc))
    name = request.POST.get("name", "").strip()[:200]
    group = RerunGroup.objects.create(name=name, owner=request.user)
    moved = sum(1 for r in runs if r.group_id is not None)
    Run.objects.filter(pk__in=ids).update(group=group)
    note = f" ({moved} of them left their previous group)" if moved else ""
    messages.success(request, f"Saved {len(runs)} runs as {group}{note}.")
    return redirect("compare:group", group_id=group.pk)

