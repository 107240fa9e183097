"""Upload JSONL trajectories of other agents as runs."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from runs.core import access
from runs.imports.forms import ImportForm
from runs.imports.services import import_lines

# A few trajectories in the import format, written for this page (not taken
# from any data set): the page shows the first line, the link downloads all.
SAMPLE = Path(__file__).parent / "samples" / "trajectories.jsonl"
# Runs listed under an import's result; the run list has them all (filter by source).
RUNS_SHOWN = 200


def _example_line() -> str:
    with SAMPLE.open(encoding="utf-8") as f:
        return f.readline().strip()


@login_required
@require_http_methods(["GET", "POST"])
def run_import(request: HttpRequest) -> HttpResponse:
    project = access.project(request)
    if request.method == "POST":
        access.require_reviewer(request)
    form = ImportForm(request.POST or None, request.FILES or None)
    result = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            result = import_lines(form.cleaned_data["file"], project_id=project.pk, owner=request.user,
                                  source=form.cleaned_data["source"])
            status = 200 if result.run_ids or result.existing or not result.errors else 400
        else:
            status = 400
    runs = []
    if result:
        existing = {run_id for _, run_id in result.existing}
        runs = list(access.runs_for(request).filter(pk__in=[*result.run_ids, *existing]).order_by("pk")[:RUNS_SHOWN])
        for run in runs:
            run.already_imported = run.pk in existing
    return render(request, "imports/page.html",
                  {"form": form, "result": result, "runs": runs, "example": _example_line()}, status=status)


@login_required
@require_GET
def run_import_sample(request: HttpRequest) -> HttpResponse:
    """The sample file, as a download to edit or to import as it is."""
    response = HttpResponse(SAMPLE.read_bytes(), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="agentlab-sample-trajectories.jsonl"'
    return response
