"""Watchdog policies: named, versioned; an edit saves the next version."""

from __future__ import annotations

import json

from django import forms
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from runs.models import Policy
from tracing.watchdog import DEFAULT_POLICY, PolicyError
from tracing.watchdog import Policy as WatchdogPolicy

# Keys that live in their own columns, not in Policy.config.
_COLUMNS = ("name", "version", "description")


def _config_of(policy: WatchdogPolicy) -> dict:
    return {k: v for k, v in policy.to_dict().items() if k not in _COLUMNS}


class PolicyForm(forms.Form):
    name = forms.SlugField(max_length=80)
    description = forms.CharField(max_length=300, required=False)
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 28, "class": "mono"}),
                             help_text="thresholds, windows, ladder, enabled, use_complexity — JSON; missing keys take the defaults")

    def clean(self):
        data = super().clean()
        raw = data.get("config")
        if raw is None:
            return data
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            self.add_error("config", f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")
            return data
        if isinstance(parsed, dict):
            for key in _COLUMNS:
                if key in parsed:
                    self.add_error("config", f"policy field '{key}': set it in its own field, not in the JSON")
                    return data
        try:
            policy = WatchdogPolicy.from_dict(parsed)
        except PolicyError as exc:
            self.add_error("config", str(exc))
            return data
        data["policy"] = policy
        return data


@login_required
@require_GET
def policy_list(request: HttpRequest) -> HttpResponse:
    policies = Policy.objects.select_related("created_by").order_by("name", "-version")
    return render(request, "runs/policies.html", {"policies": policies})


@login_required
@require_http_methods(["GET", "POST"])
def policy_edit(request: HttpRequest, name: str | None = None) -> HttpResponse:
    current = Policy.objects.filter(name=name).order_by("-version").first() if name else None
    if name and current is None:
        current = get_object_or_404(Policy, name=name)
    if current is not None:
        initial = {"name": current.name, "description": current.description,
                   "config": json.dumps(_config_of(current.as_policy()), indent=2)}
    else:
        initial = {"config": json.dumps(_config_of(DEFAULT_POLICY), indent=2)}
    form = PolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        policy_name = form.cleaned_data["name"] if current is None else current.name
        config = _config_of(form.cleaned_data["policy"])
        try:
            with transaction.atomic():
                last = Policy.objects.select_for_update().filter(name=policy_name).order_by("-version").first()
                if current is None and last is not None:
                    form.add_error("name", "A policy with this name exists; edit it to save a new version.")
                    raise IntegrityError
                saved = Policy.objects.create(
                    name=policy_name,
                    version=(last.version + 1) if last else 1,
                    description=form.cleaned_data["description"],
                    config=config,
                    created_by=request.user,
                )
        except IntegrityError:
            if not form.errors:
                form.add_error(None, "Someone saved this policy at the same time; reload and try again.")
        else:
            return redirect(f"/policies/#policy-{saved.pk}")
    status = 400 if request.method == "POST" else 200
    return render(request, "runs/policy_form.html", {"form": form, "current": current}, status=status)
