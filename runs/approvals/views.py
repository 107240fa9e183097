"""The approvals list and the decision panel (also loaded on a paused run's page)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from runs.approvals.models import Approval
from runs.approvals.services import ApprovalError, approval_decide, approvals_expire
from runs.core import access
from runs.core.error_text import APPROVAL, QUEUE, translated
from runs.core.queue import QueueUnavailable
from tracing.core import shown_json
from tracing.store.models import Step

RECENT = 50


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _approvals(request: HttpRequest):
    return Approval.objects.filter(run__in=access.runs_for(request)).select_related("run", "decided_by")


@login_required
@require_GET
def approval_list(request: HttpRequest) -> HttpResponse:
    approvals_expire()
    pending = list(_approvals(request).filter(status=Approval.Status.PENDING).order_by("created_at"))
    # The flagged observations of all pending requests in one query.
    wanted = Q(pk__in=[])
    for a in pending:
        if a.after_injection is not None:
            wanted |= Q(run_id=a.run_id, index=a.after_injection)
    flagged = {(s.run_id, s.index): s for s in Step.objects.filter(wanted)} if len(wanted) > 1 else {}
    can_decide = access.is_reviewer(request)
    panels = [{"approval": a, "run": a.run, "flagged": flagged.get((a.run_id, a.after_injection)),
               "args_json": shown_json.dumps(a.args, indent=2)} for a in pending]
    decided = list(_approvals(request).exclude(status=Approval.Status.PENDING).order_by("-decided_at", "-pk")[:RECENT])
    return render(request, "approvals/list.html", {"panels": panels, "decided": decided, "can_decide": can_decide})


def _panel_context(request: HttpRequest, approval: Approval) -> dict:
    flagged = None
    if approval.after_injection is not None:
        flagged = Step.objects.filter(run_id=approval.run_id, index=approval.after_injection).first()
    return {"approval": approval, "run": approval.run, "flagged": flagged, "can_decide": access.is_reviewer(request),
            "args_json": shown_json.dumps(approval.args, indent=2)}


@login_required
@require_GET
def run_panel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access.run_for(request, run_id)
    approvals_expire()
    approval = Approval.objects.filter(run=run).select_related("run", "decided_by").order_by("-step_index").first()
    if approval is None:
        return HttpResponse("")
    return render(request, "approvals/_panel.html", _panel_context(request, approval))


@login_required
@require_POST
def decide(request: HttpRequest, approval_id: int) -> HttpResponse:
    approval = get_object_or_404(_approvals(request), pk=approval_id)
    if not access.is_reviewer(request):
        return _text(_("Deciding on a write needs the reviewer permission."), 403)
    try:
        approval = approval_decide(approval_id=approval.pk, user=request.user, verdict=request.POST.get("verdict", ""),
                                   args_text=request.POST.get("args", ""), reason=request.POST.get("reason", ""))
    except ApprovalError as exc:
        return _text(translated(str(exc), APPROVAL), 409 if exc.conflict else 400)
    except QueueUnavailable as exc:
        return _text(_("%(why)s The request is still pending; try again.") % {"why": translated(str(exc), QUEUE)},
                     503)
    approval = Approval.objects.select_related("run", "decided_by").get(pk=approval.pk)
    response = render(request, "approvals/_panel.html", _panel_context(request, approval))
    # The run is queued again: reload, so the run page goes live and the list moves it to "decided".
    response["HX-Refresh"] = "true"
    return response
