"""Who may see and do what: every view asks here, never a template (STYLE 2).

Runs, tasks, policies, rerun groups, what-if jobs and API tokens belong to a
project (agentlab.projects); a signed-in user acts in one project at a time
(the header's switcher, kept in the session) with their role in it:

- viewer: reads every page, export and figure of the project;
- reviewer: also launches runs and reruns, imports, saves comparisons, runs
  what-ifs, labels interruptions and forks runs;
- admin: also edits policies, saves what-if winners, manages API tokens and
  members, and stops anyone's run.

Stop is the run's owner's or an admin's: a reviewer who doubts a run forks it
rather than ending a colleague's experiment.

Anything of another project is a 404, like a missing one (its id tells
nothing); a role too low for a write is a 403 that names the role needed.

A new view: read through runs_for / run_for / group_for / tasks_for /
policies_for (or filter its own model on project_id(request)); before a
write call require_reviewer or require_admin; then give its URL pattern a row
in tests/test_access.py, whose matrix fails until every pattern has one.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _

from agentlab.projects import current
from agentlab.projects.models import Membership, Project, Role
from runs.core.models import Policy, PolicyQuerySet, RerunGroup, Run, RunQuerySet, Task


def membership(request: HttpRequest) -> Membership | None:
    return current.membership(request)


def project_id(request: HttpRequest) -> int | None:
    found = current.membership(request)
    return found.project_id if found else None


def project(request: HttpRequest) -> Project:
    """The current project (403 for a user who belongs to none)."""
    return current.require_role(request, Role.VIEWER).project


def runs_for(request: HttpRequest) -> RunQuerySet:
    """The runs the signed-in user may see: their current project's."""
    return Run.objects.for_project(project_id(request))


def run_for(request: HttpRequest, run_id: int, *related: str) -> Run:
    """A run the user may see, or 404 (another project's run looks like a missing one)."""
    return get_object_or_404(runs_for(request).select_related(*related), pk=run_id)


def group_for(request: HttpRequest, group_id: int) -> RerunGroup:
    return get_object_or_404(RerunGroup, pk=group_id, project_id=project_id(request))


def tasks_for(request: HttpRequest):
    """The project's tasks and the shared built-in ones."""
    return Task.objects.for_project(project_id(request))


def policies_for(request: HttpRequest) -> PolicyQuerySet:
    return Policy.objects.for_project(project_id(request))


def is_reviewer(request: HttpRequest) -> bool:
    found = current.membership(request)
    return found is not None and found.is_reviewer


def is_admin(request: HttpRequest) -> bool:
    found = current.membership(request)
    return found is not None and found.is_admin


def require_reviewer(request: HttpRequest) -> Membership:
    # Checked in the view, so the htmx endpoints are as protected as the page.
    return current.require_role(request, Role.REVIEWER)


def require_admin(request: HttpRequest) -> Membership:
    return current.require_role(request, Role.ADMIN)


def can_stop(request: HttpRequest, run: Run) -> bool:
    return (run.owner_id is not None and run.owner_id == request.user.pk) or is_admin(request)


def require_stop(request: HttpRequest, run: Run) -> None:
    if not can_stop(request, run):
        raise PermissionDenied(_("Only the run's owner or a project admin may stop it."))
