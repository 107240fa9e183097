"""Upload JSONL trajectories of other agents as runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from runs.imports.forms import ImportForm
from runs.imports.services import import_lines
from runs.launch.access import runs_for


@login_required
@require_http_methods(["GET", "POST"])
def run_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    result = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            result = import_lines(form.cleaned_data["file"], owner=request.user, source=form.cleaned_data["source"])
            status = 200 if result.run_ids or not result.errors else 400
        else:
            status = 400
    runs = runs_for(request).filter(pk__in=result.run_ids).order_by("pk")[:200] if result else []
    return render(request, "imports/page.html", {"form": form, "result": result, "runs": runs}, status=status)
