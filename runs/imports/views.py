"""Upload JSONL trajectories of other agents as runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from runs.imports.forms import ImportForm
from runs.imports.services import import_lines
from runs.launch.access import runs_for

# Runs listed under an import's result; the run list has them all (filter by source).
RUNS_SHOWN = 200


@login_required
@require_http_methods(["GET", "POST"])
def run_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    result = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            result = import_lines(form.cleaned_data["file"], owner=request.user, source=form.cleaned_data["source"])
            status = 200 if result.run_ids or result.existing or not result.errors else 400
        else:
            status = 400
    runs = []
    if result:
        existing = {run_id for _, run_id in result.existing}
        runs = list(runs_for(request).filter(pk__in=[*result.run_ids, *existing]).order_by("pk")[:RUNS_SHOWN])
        for run in runs:
            run.already_imported = run.pk in existing
    return render(request, "imports/page.html", {"form": form, "result": result, "runs": runs}, status=status)
