"""Reviewers' verdicts on shown breaks (the run page's panel), the Breaks page
with each pattern's confirmed precision and state in the project, the rule's
settings, an admin's override, and the labels' export."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from runs.breaks import rule
from runs.breaks.forms import BreakSettingsForm, OverrideForm
from runs.breaks.selectors import EXPORT_COLUMNS, export_rows, pattern_rows, run_panel, settings_of
from runs.breaks.services import BreakError, break_label, break_settings_set, pattern_override
from runs.core import access
from runs.core.anchor_names import anchor_label
from runs.core.csv_cells import csv_lines, jsonl_lines
from runs.core.error_text import BREAK, translated

# The id of the Breaks page's table: its forms swap it, htmx names it in HX-Target.
TABLE_ID = "breaks-table"


def _bad_request(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


@login_required
@require_POST
def run_label(request: HttpRequest, run_id: int) -> HttpResponse:
    """A reviewer's verdict on the run's shown break (the run page's panel)."""
    access.require_reviewer(request)
    run = access.run_for(request, run_id)
    raw_step = request.POST.get("step", "")
    if raw_step and not (raw_step.isdigit() and len(raw_step) < 10):
        return _bad_request(_("step must be a step index (0, 1, 2...)"))
    try:
        label = break_label(run=run, reviewer=request.user, verdict=request.POST.get("verdict", ""),
                            note=request.POST.get("note", ""), step=int(raw_step) if raw_step else None)
    except BreakError as exc:
        return _bad_request(translated(str(exc), BREAK))
    if not request.htmx:
        return redirect(f"{run.get_absolute_url()}#break-panel")
    run.refresh_from_db()
    return render(request, "breaks/_panel.html", {
        "run": run, "breaks": run_panel(run, request.user), "can_label": True,
        # The verdict demoted the pattern here (or an admin's change landed):
        # the run shows another break, or none, from now on.
        "moved_from": label if run.first_anchor_break != label.step else None,
    })


def _page_context(request: HttpRequest) -> dict:
    project = access.project(request)
    conf = settings_of(project.pk)
    rows = pattern_rows(project.pk, conf)
    return {
        "project": project, "conf": conf, "rows": rows, "table_id": TABLE_ID, "can_admin": access.is_admin(request),
        "floor_pct": round(conf.floor * 100), "overrides": rule,
        "settings_form": BreakSettingsForm(initial={"floor": round(conf.floor * 100), "min_labels": conf.min_labels}),
        "labelled": sum(row.tally.labelled for row in rows),
    }


@login_required
@require_GET
def breaks_page(request: HttpRequest) -> HttpResponse:
    context = _page_context(request)
    if request.htmx.target == TABLE_ID:
        return render(request, "breaks/_table.html", context)
    return render(request, "breaks/page.html", context)


def _after_admin_write(request: HttpRequest, changed: list[str]) -> HttpResponse:
    if not request.htmx:
        return redirect(reverse("breaks:page"))
    context = {**_page_context(request), "changed": [anchor_label(p) for p in changed]}
    return render(request, "breaks/_table.html", context)


@login_required
@require_POST
def breaks_settings(request: HttpRequest) -> HttpResponse:
    """The project's floor and minimum number of labels (admins)."""
    membership = access.require_admin(request)
    form = BreakSettingsForm(request.POST)
    if not form.is_valid():
        return _bad_request("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    changed = break_settings_set(project_id=membership.project_id, floor=form.cleaned_data["floor"] / 100,
                                 min_labels=form.cleaned_data["min_labels"], user=request.user)
    return _after_admin_write(request, changed)


@login_required
@require_POST
def pattern_set(request: HttpRequest, pattern: str) -> HttpResponse:
    """An admin keeps a pattern shown, demotes it by hand, or gives it back to the rule."""
    membership = access.require_admin(request)
    form = OverrideForm(request.POST)
    if not form.is_valid():
        return _bad_request("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    try:
        changed = pattern_override(project_id=membership.project_id, pattern=pattern,
                                   override=form.cleaned_data["override"], user=request.user)
    except BreakError as exc:
        return _bad_request(translated(str(exc), BREAK))
    return _after_admin_write(request, changed)


def _rows(request: HttpRequest) -> Iterator[dict]:
    return export_rows(access.project(request).pk)


@login_required
@require_GET
def export_csv(request: HttpRequest) -> StreamingHttpResponse:
    lines = csv_lines(_rows(request), EXPORT_COLUMNS, json_columns=["evidence"])
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="break-labels.csv"'
    return response


@login_required
@require_GET
def export_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    lines = jsonl_lines(_rows(request))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="break-labels.jsonl"'
    return response
