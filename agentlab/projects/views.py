"""The header's project switcher and the members page (project admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agentlab.projects import current
from agentlab.projects.models import Membership, Role
from agentlab.projects.services import MembershipError, membership_add, membership_remove, membership_set_role


@login_required
@require_POST
def project_switch(request: HttpRequest) -> HttpResponse:
    raw = request.POST.get("project", "")
    if not raw.isdigit() or current.select(request, int(raw)) is None:
        raise Http404(_("no such project among yours"))
    # Back to the list, not the page we came from: a run page of the old
    # project would now be a 404.
    target = request.POST.get("next", "")
    if not (target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})):
        target = ""
    return redirect(target or "runs:list")


@login_required
@require_http_methods(["GET", "POST"])
def member_list(request: HttpRequest) -> HttpResponse:
    admin = current.require_role(request, Role.ADMIN)
    error = ""
    if request.method == "POST":
        try:
            added = membership_add(project=admin.project, username=request.POST.get("username", ""),
                                   role=request.POST.get("role", Role.VIEWER))
        except MembershipError as exc:
            error = str(exc)
        else:
            messages.success(request, _("%(user)s is now a %(role)s of %(project)s.")
                             % {"user": added.user, "role": added.role_name, "project": admin.project})
            return redirect("projects:members")
    members = Membership.objects.filter(project=admin.project).select_related("user").order_by("user__username")
    return render(request, "projects/members.html",
                  {"project": admin.project, "members": members, "roles": Role.choices, "error": error,
                   "me": admin}, status=400 if error else 200)


def _member(request: HttpRequest, membership_id: int) -> Membership:
    admin = current.require_role(request, Role.ADMIN)
    return get_object_or_404(Membership.objects.select_related("user", "project"), pk=membership_id,
                             project=admin.project)


@login_required
@require_POST
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    member = _member(request, membership_id)
    try:
        membership_set_role(membership=member, role=request.POST.get("role", ""))
    except MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("%(user)s is now a %(role)s.") % {"user": member.user, "role": member.role_name})
    return redirect("projects:members")


@login_required
@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    member = _member(request, membership_id)
    try:
        membership_remove(membership=member)
    except MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("%(user)s left %(project)s.") % {"user": member.user, "project": member.project})
    return redirect("projects:members")
