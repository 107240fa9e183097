"""Deletion pages (admins): a run, the current project (typed confirmation), the records and the retention."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from runs.core import access
from runs.deletion.services import project_delete, retention_set
from tracing.store.models import DeletionRecord, Retention
from tracing.store.step_deletion import runs_delete

# Longest retention a project may set (ten years): longer is "forever", left blank.
MAX_KEEP_DAYS = 3660
RECORDS_SHOWN = 200


@login_required
@require_http_methods(["GET", "POST"])
def run_delete(request: HttpRequest, run_id: int) -> HttpResponse:
    admin = access.require_admin(request)
    run = access.run_for(request, run_id)
    if request.method == "POST":
        record = runs_delete(run_ids=[run.pk], user=request.user, project=admin.project, target=f"run {run.pk}")
        messages.success(request, _("Run %(run)s deleted (%(rows)s rows).") % {"run": run_id, "rows": record.rows})
        return redirect("runs:list")
    return render(request, "deletion/confirm.html", {
        "what": f"run {run.pk}", "detail": run.prompt[:200], "steps": run.step_count, "confirm_word": ""})


@login_required
@require_http_methods(["GET", "POST"])
def project_delete_view(request: HttpRequest) -> HttpResponse:
    admin = access.require_admin(request)
    project = admin.project
    error = ""
    if request.method == "POST":
        if request.POST.get("confirm", "").strip() != project.slug:
            error = _("Type the project's slug, %(slug)s, to delete it.") % {"slug": project.slug}
        else:
            record = project_delete(project=project, user=request.user)
            messages.success(request, _("Project %(name)s deleted (%(rows)s rows).") % {"name": record.project_name, "rows": record.rows})
            return redirect("runs:list")
    return render(request, "deletion/confirm.html", {
        "what": _("project %(name)s") % {"name": project}, "detail": _(
            "every run, step, model call, review, policy, task, token and membership of the project"), "steps": None, "confirm_word": project.slug, "error": error},
        status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def deletion_records(request: HttpRequest) -> HttpResponse:
    """What was deleted in the project (runs, retention sweeps), and its retention setting."""
    admin = access.require_admin(request)
    error = ""
    if request.method == "POST":
        raw = request.POST.get("keep_days", "").strip()
        if not raw:
            retention_set(project=admin.project, keep_days=None)
            messages.success(request, _("Runs are kept until deleted."))
            return redirect("deletion:records")
        if raw.isdigit() and 1 <= int(raw) <= MAX_KEEP_DAYS:
            retention_set(project=admin.project, keep_days=int(raw))
            messages.success(request, _("Runs older than %(days)d days will be deleted.") % {"days": int(raw)})
            return redirect("deletion:records")
        error = _("keep_days: a whole number of days from 1 to %(max)d, or blank to keep runs.") % {"max": MAX_KEEP_DAYS}
    retention = Retention.objects.filter(project=admin.project).first()
    records = DeletionRecord.objects.filter(project=admin.project)[:RECORDS_SHOWN]
    return render(request, "deletion/records.html", {
        "project": admin.project, "retention": retention, "records": records, "error": error,
        "max_keep_days": MAX_KEEP_DAYS}, status=400 if error else 200)
