"""Compare reruns side by side (issue 6): aligned grid, first divergence, pass@k / pass^k.

The selection lives in the URL (``/compare/?runs=1,2,3``, ``/compare/group/7/``)
so a comparison can be shared. The alignment and the metrics are the pure
modules ``tracing.core.alignment`` and ``tracing.core.metrics``; the rows are loaded by
runs.compare.selectors and shaped by runs.compare.grid.
"""

from __future__ import annotations

from collections import Counter

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.compare.grid import (
    GROUP_BY,
    RELATION_TEXT,
    Column,
    branch_views,
    compare_charts,
    diff_rows,
    differing_settings,
    grid_rows,
    run_stats,
    setting,
    setting_summaries,
    task_key,
)
from runs.compare.selectors import ID, SelectionError, grid_steps, parse_run_ids, runs_by_id
from runs.compare.services import group_save
from runs.core import access
from runs.core.error_text import SELECTION, translated
from runs.core.models import RerunGroup, Run
from tracing.core.alignment import MAX_RUNS, align, align_runs
from tracing.core.metrics import summarize_tasks
from tracing.store.models import Step

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


def _error(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return render(request, "compare/error.html", {"message": message}, status=status)


def _grouped(runs: list[Run], by: str) -> list[Run]:
    """Columns of one setting side by side; the selection order within each."""
    first_seen: dict[str, int] = {}
    for r in runs:
        first_seen.setdefault(setting(r, by), len(first_seen))
    return sorted(runs, key=lambda r: first_seen[setting(r, by)])


def _compare_context(request: HttpRequest, runs: list[Run], *, group: RerunGroup | None) -> dict:
    by = request.GET.get("by", "")
    by = by if by in GROUP_BY else ""
    runs = _grouped(runs, by) if by else runs
    steps = grid_steps([r.pk for r in runs])
    grid = align_runs([steps[r.pk] for r in runs])
    columns = [Column(r, setting(r, by), r.get_absolute_url(), runs[0].pk if k else None)
               for k, r in enumerate(runs)]
    stats = summarize_tasks(run_stats(r) for r in runs)
    ks = list(range(1, len(stats.pass_at) + 1))
    tasks = Counter(task_key(r) for r in runs)
    return {
        "group": group,
        "runs": runs,
        "columns": columns,
        "rows": grid_rows(grid, columns, reverse("compare:cell")),
        "n_cols": len(runs) + 1,
        # An explicit width lets the browser use the fixed table layout: with
        # 50 x 200 the grid has thousands of cells and auto layout measures them all.
        "grid_width": f"{GRID_ROW_HEAD_REM + GRID_COLUMN_REM * len(runs):.1f}rem",
        "first_divergence": None if grid.first_divergence is None else grid.first_divergence + 1,
        "branches": branch_views(grid, runs),
        "overall": stats.overall,
        "pass_rows": list(zip(ks, stats.pass_at, stats.pass_hat, stats.tasks_at, strict=True)),
        "tasks": sorted(tasks.items(), key=lambda kv: -kv[1]),
        "several_tasks": len(tasks) > 1,
        "empty_runs": [r.pk for r in runs if not steps[r.pk]],
        "live": any(r.is_live for r in runs),
        "live_count": sum(r.is_live for r in runs),
        "poll_every": POLL_EVERY,
        "poll_url": request.get_full_path(),
        "by": by,
        "group_by": GROUP_BY,
        "differing": differing_settings(runs) if not by else [],
        "settings": setting_summaries(columns) if by else [],
        "charts": compare_charts(columns, grid, ks, list(stats.pass_at), list(stats.pass_hat)),
        "selection": ",".join(str(r.pk) for r in runs),
        "base_url": request.path,
        "cell_url": reverse("compare:cell"),
        "diff_url": reverse("compare:diff"),
    }


def _render_compare(request: HttpRequest, runs: list[Run], *, group: RerunGroup | None = None) -> HttpResponse:
    context = _compare_context(request, runs, group=group)
    if request.htmx:
        response = render(request, "compare/_body.html", context)
        if not context["live"]:
            # The poll's last answer: htmx swaps it in and stops polling.
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "compare/page.html", context)


def _selection(request: HttpRequest, values: list[str]) -> list[Run]:
    """The runs of a `runs=1,2,3` selection the user may see (SelectionError otherwise)."""
    return runs_by_id(access.runs_for(request), parse_run_ids(values))


@login_required
@require_GET
def compare_runs(request: HttpRequest) -> HttpResponse:
    try:
        runs = _selection(request, request.GET.getlist("runs"))
    except SelectionError as exc:
        return _error(request, translated(str(exc), SELECTION))
    return _render_compare(request, runs)


@login_required
@require_GET
def compare_group(request: HttpRequest, group_id: int) -> HttpResponse:
    group = access.group_for(request, group_id)
    runs = list(access.runs_for(request).select_related("task", "policy")
                .filter(group=group).order_by("created_at", "id")[: MAX_RUNS + 1])
    if len(runs) > MAX_RUNS:
        return _error(request, _("This group has more than %(max)d runs; at most %(max)d can be compared at once. "
                                 "Select some of them on the run list instead.") % {"max": MAX_RUNS})
    return _render_compare(request, runs, group=group)


def _int_param(request: HttpRequest, name: str, *, required: bool = True, default: int = 0) -> int:
    raw = request.GET.get(name, "")
    if not raw and not required:
        return default
    if not ID.fullmatch(raw):
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
        # Plain text: the message may quote the bad value, which must not render as HTML.
        return HttpResponse(translated(str(exc), SELECTION), status=400, content_type="text/plain; charset=utf-8")
    run = access.run_for(request, run_id)
    if not request.htmx:
        # Without htmx the cell is a plain link: show the steps in the run itself.
        return redirect(f"{run.get_absolute_url()}#step-{first}")
    steps = list(Step.objects.filter(run=run, index__gte=first, index__lte=last).order_by("index")[:CELL_MAX_STEPS])
    return render(request, "compare/_cell.html",
                  {"run": run, "steps": steps, "first": first, "last": last, "cols": max(cols, 1), "row": row})


@login_required
@require_GET
def compare_diff(request: HttpRequest) -> HttpResponse:
    """Two runs, aligned, every step shown: the focused diff of two grid columns."""
    try:
        a_id, b_id = _int_param(request, "a"), _int_param(request, "b")
        if a_id == b_id:
            raise SelectionError("Pick two different runs to diff.")
        run_a, run_b = runs_by_id(access.runs_for(request), [a_id, b_id])
    except SelectionError as exc:
        return _error(request, translated(str(exc), SELECTION))
    by_run: dict[int, list[Step]] = {a_id: [], b_id: []}
    for step in Step.objects.filter(run_id__in=[a_id, b_id]).order_by("run_id", "index"):
        by_run[step.run_id].append(step)
    grid = align(by_run[a_id], by_run[b_id])
    rows = diff_rows(grid)
    counts = Counter(row.relation for row in rows)
    context = {
        "a": run_a,
        "b": run_b,
        "rows": rows,
        "counts": [(RELATION_TEXT[k], counts.get(k, 0), k) for k in RELATION_TEXT],
        "first_divergence": None if grid.first_divergence is None else grid.first_divergence + 1,
        "branches": branch_views(grid, [run_a, run_b]),
        "back_url": f"{reverse('compare:page')}?runs={a_id},{b_id}",
    }
    return render(request, "compare/diff.html", context)


@login_required
@require_POST
def compare_save(request: HttpRequest) -> HttpResponse:
    """Save a selection as a RerunGroup; the runs move into it (a run has one group)."""
    access.require_reviewer(request)
    try:
        runs = _selection(request, request.POST.getlist("runs"))
    except SelectionError as exc:
        return _error(request, translated(str(exc), SELECTION))
    name = request.POST.get("name", "").strip()
    if "\x00" in name:
        return _error(request, _("The name contains a NUL character, which cannot be stored."))
    group, moved = group_save(owner=request.user, project_id=access.project_id(request), runs=runs, name=name)
    note = (_(" (%(moved)d of them left their previous group)") % {"moved": moved}) if moved else ""
    messages.success(request, _("Saved %(n)d runs as %(group)s%(note)s.") % {"n": len(runs), "group": group, "note": note})
    return redirect("compare:group", group_id=group.pk)
