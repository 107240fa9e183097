"""A run's tags, metadata and session (edited on the run page), and a session's runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from agentlab.storable import unstorable
from runs.core import access
from runs.labels.forms import RunLabelsForm
from runs.labels.services import run_labels_set
from tracing.core.label_limits import MAX_SESSION_CHARS

# A session is a conversation: a few dozen runs; more is a mis-used id, shown
# with a note rather than loaded whole.
SESSION_RUNS_SHOWN = 500


@login_required
@require_http_methods(["GET", "POST"])
def run_labels(request: HttpRequest, run_id: int) -> HttpResponse:
    """GET: the labels block (with its form when asked, `?edit=1`); POST: save them."""
    run = access.run_for(request, run_id)
    editing = request.method == "POST" or request.GET.get("edit") == "1"
    form = None
    status = 200
    if editing:
        access.require_reviewer(request)
        form = RunLabelsForm.for_run(run, request.POST if request.method == "POST" else None)
        if request.method == "POST":
            if form.is_valid():
                run = run_labels_set(run=run, labels=form.labels)
                if not request.htmx:
                    return redirect(run)
                form = None
            else:
                status = 400
    context = {"run": run, "form": form, "can_edit": access.is_reviewer(request)}
    if request.htmx:
        return render(request, "labels/_labels.html", context, status=status)
    return render(request, "labels/edit.html", context, status=status)


@login_required
@require_GET
def session_detail(request: HttpRequest) -> HttpResponse:
    """The runs of one session (`?id=`), oldest first: a conversation in order."""
    session_id = request.GET.get("id", "").strip()
    if not session_id or len(session_id) > MAX_SESSION_CHARS or unstorable(session_id):
        raise Http404(_("no such session"))  # NUL: no session can have it (Postgres refuses it even in a lookup)
    qs = (access.runs_for(request).filter(session_id=session_id).select_related("task")
          .only("id", "status", "success", "prompt", "model_name", "provider", "step_count", "prompt_tokens",
                "completion_tokens", "tags", "session_id", "created_at", "final_answer", "task__slug")
          .order_by("created_at", "id"))
    runs = list(qs[:SESSION_RUNS_SHOWN + 1])
    if not runs:
        raise Http404(_("no such session"))
    return render(request, "labels/session.html", {
        "session_id": session_id, "runs": runs[:SESSION_RUNS_SHOWN], "truncated": len(runs) > SESSION_RUNS_SHOWN,
        "tokens": sum(r.prompt_tokens + r.completion_tokens for r in runs),
        "steps": sum(r.step_count for r in runs)})
