"""The signed-in user's current project and role, read once per request.

The roles themselves are checked in runs.core.access (pages) and in
tracing's token views; this module only answers "which membership is this
request acting under". One query fetches every membership of the user (a
handful): the current one and the header's project switcher both come from it.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils.translation import gettext as _

from agentlab.projects.models import ROLE_NAMES, Membership, Project, Role

SESSION_KEY = "project_id"


def memberships(request: HttpRequest) -> list[Membership]:
    cached = getattr(request, "_project_memberships", None)
    if cached is None:
        user = getattr(request, "user", None)
        cached = (list(Membership.objects.filter(user=user).select_related("project"))
                  if user is not None and user.is_authenticated else [])
        request._project_memberships = cached
    return cached


def membership(request: HttpRequest) -> Membership | None:
    """The membership of the project chosen in the session, else the one the
    user joined first (stable when they are added to more projects later)."""
    found = memberships(request)
    wanted = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    return next((m for m in found if m.project_id == wanted), min(found, key=lambda m: m.pk, default=None))


def select(request: HttpRequest, project_id: int) -> Membership | None:
    """Make `project_id` the current project, if the user is a member of it."""
    chosen = next((m for m in memberships(request) if m.project_id == project_id), None)
    if chosen is not None:
        request.session[SESSION_KEY] = project_id
    return chosen


def require_role(request: HttpRequest, role: str = Role.VIEWER) -> Membership:
    """The current membership if it has at least `role`; 403 otherwise, saying what is missing."""
    current = membership(request)
    if current is None:
        raise PermissionDenied(_("You are not a member of any project: ask a project admin to add you."))
    if not current.has_role(role):
        raise PermissionDenied(_("In %(project)s you are a %(role)s; this needs the %(needed)s role: ask a project "
                                 "admin.") % {"project": current.project, "role": current.role_name,
                                              "needed": ROLE_NAMES[Role(role)]})
    return current


def current_project(request: HttpRequest) -> Project | None:
    current = membership(request)
    return current.project if current else None


def context(request: HttpRequest) -> dict:
    """Template context: the header's switcher. Callables, so a page that never
    shows the header (an htmx partial) never queries."""
    return {"project_memberships": lambda: memberships(request), "project_membership": lambda: membership(request)}
