"""The failures queue: failed runs with their first-guess layer; reviewers
confirm or correct it (keys 1–5, c to confirm; static/review.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from runs.core import access
from runs.core.error_text import LAYER_LABEL, translated
from runs.core.paging import keyset_page
from runs.failures.models import LayerLabel
from runs.failures.selectors import breakdown, failed
from runs.failures.services import LayerLabelError, label_layer
from runs.launch.selectors import trajectory
from tracing.core.attribution import LAYER_KEYS, LAYERS, layer_of

RUNS_PER_PAGE = 50
MORE_ROWS_ID = "more-failures"
# Steps shown around the step the guess points at.
STEPS_BEFORE, STEPS_AFTER = 3, 2
LABEL_STATES = {"unlabelled", "agreed", "corrected"}


def _bad_request(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _filtered(request: HttpRequest):
    runs = failed(access.runs_for(request))
    layer = request.GET.get("layer", "")
    if layer in LAYER_KEYS:
        runs = runs.filter(attribution__layer=layer)
    elif layer == "none":
        runs = runs.exclude(attribution__has_key="layer")
    state = request.GET.get("state", "")
    if state == "unlabelled":
        runs = runs.filter(layer_label__isnull=True)
    elif state == "agreed":
        runs = runs.filter(layer_label__layer=F("layer_label__guessed"))
    elif state == "corrected":
        runs = runs.filter(layer_label__isnull=False).exclude(layer_label__layer=F("layer_label__guessed"))
    return runs


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    runs = _filtered(request).select_related("task", "layer_label").only(
        "pk", "prompt", "model_name", "source", "finished_at", "attribution", "task__slug", "status", "success",
        "layer_label__layer", "layer_label__guessed")
    before = request.GET.get("before", "")
    if before:
        if not before.isdigit() or len(before) > 18:
            return _bad_request(_("Not a page cursor; start from the first page."))
        runs = runs.filter(pk__lt=int(before))
    rows, next_query = keyset_page(runs.order_by("-pk"), RUNS_PER_PAGE, request, lambda run: str(run.pk))
    context = {"runs": rows, "next_query": next_query, "more_id": MORE_ROWS_ID, "layers": LAYERS,
               "layer": request.GET.get("layer", ""), "state": request.GET.get("state", "")}
    if request.htmx.target == MORE_ROWS_ID:
        return render(request, "failures/_rows.html", context)
    context["breakdown"] = breakdown(access.runs_for(request))
    selected = request.GET.get("item", "")
    context["selected"] = selected if selected.isdigit() else ""
    return render(request, "failures/queue.html", context)


def _pane_context(request: HttpRequest, run) -> dict:
    guess = run.attribution or {}
    at = guess.get("step")
    if isinstance(at, int):
        steps = trajectory(run, lo=max(0, at - STEPS_BEFORE), hi=at + STEPS_AFTER)
    else:  # the run as a whole: its ending
        last = (run.fork_from or 0) + run.step_count - 1
        steps = trajectory(run, lo=max(0, last - STEPS_BEFORE - STEPS_AFTER))
    return {"run": run, "guess": guess, "guess_layer": layer_of(guess.get("layer", "")), "steps": steps,
            "at": at, **_label_context(request, run)}


def _label_context(request: HttpRequest, run) -> dict:
    label = LayerLabel.objects.filter(run=run).select_related("reviewer").first()
    return {"run": run, "label": label, "layers": LAYERS, "can_label": access.is_reviewer(request),
            "guess": run.attribution or {}}


@login_required
@require_GET
def item(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access.run_for(request, run_id, "task")
    context = _pane_context(request, run)
    template = "failures/_pane.html" if request.htmx else "failures/item.html"
    return render(request, template, context)


@login_required
@require_POST
def label(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access.run_for(request, run_id, "task")
    if not access.is_reviewer(request):
        return HttpResponse(_("Labelling needs the reviewer permission."), status=403,
                            content_type="text/plain; charset=utf-8")
    try:
        label_layer(run=run, reviewer=request.user, layer=request.POST.get("layer", ""),
                    note=request.POST.get("note", ""))
    except LayerLabelError as exc:
        return _bad_request(translated(str(exc), LAYER_LABEL))
    context = _label_context(request, run)
    context["oob_row"] = True
    return render(request, "failures/_label.html", context)
