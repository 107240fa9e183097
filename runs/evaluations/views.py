"""Evaluation pages: the list, the new-evaluation form, the report."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseStopPolling

from runs.core import access
from runs.core.error_text import EVALUATION, QUEUE, translated
from runs.core.queue import QueueUnavailable
from runs.evaluations.forms import EvaluationForm
from runs.evaluations.models import Evaluation
from runs.evaluations.selectors import evaluation_report
from runs.evaluations.services import EvaluationError, evaluation_create

EVALUATIONS_PER_PAGE = 100


def _evaluations(request: HttpRequest):
    return Evaluation.objects.filter(project_id=access.project_id(request))


def _evaluation_for(request: HttpRequest, evaluation_id: int) -> Evaluation:
    # Another project's evaluation looks missing, as its runs do.
    evaluation = _evaluations(request).select_related("policy").filter(pk=evaluation_id).first()
    if evaluation is None:
        raise Http404(_("no such evaluation"))
    return evaluation


@login_required
@require_GET
def evaluation_list(request: HttpRequest) -> HttpResponse:
    evaluations = (_evaluations(request).select_related("policy")
                   .annotate(run_count=Count("entries", distinct=True), task_count=Count("tasks", distinct=True))
                   [:EVALUATIONS_PER_PAGE])
    return render(request, "evaluations/list.html", {"evaluations": evaluations})


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        access.require_reviewer(request)  # an evaluation launches runs
    form = EvaluationForm(request.POST or None, tasks=access.tasks_for(request), policies=access.policies_for(request))
    if request.method == "POST" and form.is_valid():
        try:
            evaluation = evaluation_create(owner=request.user, project=access.project(request), spec=form.spec())
        except QueueUnavailable as exc:
            form.add_error(None, _("%(why)s. Nothing was queued; try again when the queue is back.")
                           % {"why": translated(str(exc), QUEUE)})
        except EvaluationError as exc:  # the service's own rules, should the form's let one through
            form.add_error(None, translated(str(exc), EVALUATION))
        else:
            messages.success(request, _("Queued %(n)d runs.") % {"n": evaluation.entries.count()})
            return redirect(evaluation)
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluations/new.html", {"form": form}, status=status)


@login_required
@require_GET
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    evaluation = _evaluation_for(request, evaluation_id)
    report = evaluation_report(evaluation)
    if request.htmx:
        # The poll while runs are going: the whole report, until none is live.
        response = render(request, "evaluations/_report.html", {"report": report})
        return HttpResponseStopPolling(response.content) if not report.live else response
    return render(request, "evaluations/detail.html", {"report": report, "evaluation": evaluation})
