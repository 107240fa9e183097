"""Who may see and do what: every view asks here, never a template (STYLE 2).

One place to narrow when projects and roles arrive (DESIGN.md 3): today every
signed-in user sees every run (agentlab is a team tool) and reviewers are the
users with the `runs.label_interruption` permission.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from runs.launch.models import Run, RunQuerySet

REVIEWER_PERMISSION = "runs.label_interruption"


def runs_for(request: HttpRequest) -> RunQuerySet:
    """The runs the signed-in user may see."""
    return Run.objects.for_user(request.user)


def run_for(request: HttpRequest, run_id: int, *related: str) -> Run:
    """A run the user may see, or 404 (another user's run looks like a missing one)."""
    return get_object_or_404(runs_for(request).select_related(*related), pk=run_id)


def is_reviewer(request: HttpRequest) -> bool:
    return request.user.has_perm(REVIEWER_PERMISSION)


def require_reviewer(request: HttpRequest) -> None:
    # Checked in the view, so the htmx endpoints are as protected as the page.
    if not is_reviewer(request):
        raise PermissionDenied("You can read reviews but not label or fork: ask for the reviewer permission.")
