"""Watchdog policies: named, versioned; an edit saves the next version."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from runs.policies.forms import PolicyForm, initial_of
from runs.policies.models import Policy
from runs.policies.services import PolicyExists, policy_config, policy_version_save
from tracing.watchdog import DEFAULT_POLICY


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = Policy.objects.select_related("created_by").order_by("name", "-version")
    return render(request, "policies/list.html", {"policies": policies})


@login_required
@require_http_methods(["GET", "POST"])
def policy_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    current = Policy.objects.filter(name=name).order_by("-version").first() if name else None
    if name and current is None:
        current = get_object_or_404(Policy, name=name)
    policy = current.as_policy() if current is not None else DEFAULT_POLICY
    initial = initial_of(policy_config(policy))
    if current is not None:
        initial.update(name=current.name, description=current.description)
    form = PolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            saved = policy_version_save(
                name=form.cleaned_data["name"] if current is None else current.name,
                config=form.cleaned_data["policy"].to_dict(), description=form.cleaned_data["description"],
                created_by=request.user, new=current is None,
            )
        except PolicyExists:
            form.add_error("name", "A policy with this name exists; edit it to save a new version.")
        except IntegrityError:
            form.add_error(None, "Someone saved this policy at the same time; reload and try again.")
        else:
            return redirect(f"{reverse('policy_list')}#policy-{saved.pk}")
    status = 400 if request.method == "POST" else 200
    return render(request, "policies/form.html", {"form": form, "current": current}, status=status)
