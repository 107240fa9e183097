"""Watchdog policies: named, versioned; an edit saves the next version."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from runs.core import access
from runs.core.error_text import POLICY_PROTECTED, translated
from runs.policies.forms import PolicyForm, initial_of
from runs.policies.services import PolicyExists, PolicyProtected, policy_config, policy_version_save
from tracing.core.watchdog import DEFAULT_POLICY


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = access.policies_for(request).select_related("created_by").order_by("name", "-version")
    return render(request, "policies/list.html", {"policies": policies, "can_edit": access.is_admin(request)})


@login_required
@require_http_methods(["GET", "POST"])
def policy_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    # Project admins only, to read the editor too: it is a form to submit.
    project = access.require_admin(request).project
    current = access.policies_for(request).filter(name=name).order_by("-version").first() if name else None
    if name and current is None:
        raise Http404(_("no policy %(name)r in %(project)s") % {"name": name, "project": project})
    policy = current.as_policy() if current is not None else DEFAULT_POLICY
    initial = initial_of(policy_config(policy))
    if current is not None:
        initial.update(name=current.name, description=current.description)
    form = PolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            saved = policy_version_save(
                project_id=project.pk, name=form.cleaned_data["name"] if current is None else current.name,
                config=form.cleaned_data["policy"].to_dict(), description=form.cleaned_data["description"],
                created_by=request.user, new=current is None,
            )
        except PolicyProtected as exc:
            form.add_error("enabled", translated(str(exc), POLICY_PROTECTED))
        except PolicyExists:
            form.add_error("name", "A policy with this name exists; edit it to save a new version.")
        except IntegrityError:
            form.add_error(None, "Someone saved this policy at the same time; reload and try again.")
        else:
            return redirect(f"{reverse('policy_list')}#policy-{saved.pk}")
    status = 400 if request.method == "POST" else 200
    return render(request, "policies/form.html", {"form": form, "current": current}, status=status)
