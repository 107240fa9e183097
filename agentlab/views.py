"""Views of the project itself (the features live in runs/ and tracing/)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agentlab import localmodel


@require_GET
@login_required
def local_model_status(request: HttpRequest) -> HttpResponse:
    """The New-run form polls this while the local model builds or starts; the
    fragment drops its poll once the state is settled."""
    return render(request, "agentlab/_local_model_status.html", {"lm": localmodel.status()})
