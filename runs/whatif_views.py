"""The what-if page: replay a policy or a threshold sweep over stored runs."""

from __future__ import annotations

import json
from dataclasses import fields

from django import forms
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.models import Policy, WhatIfJob
from runs.whatif_service import WhatIfError, whatif_create
from tracing.watchdog import DEFAULT_POLICY, Ladder, PolicyError, Thresholds, Windows

SWEEPABLE = [f"{section}.{f.name}" for section, kind in (("thresholds", Thresholds), ("windows", Windows),
                                                          ("ladder", Ladder)) for f in fields(kind) if f.name != "tiers"]
_COLUMNS = ("name", "version", "description")


class WhatIfForm(forms.Form):
    policy = forms.ModelChoiceField(queryset=Policy.objects.none(), required=False, empty_label="— built-in default —")
    config = forms.CharField(widget=forms.Textarea(attrs={"rows": 18, "class": "mono"}),
                             help_text="the policy to replay (JSON: thresholds, windows, ladder, enabled...)")
    sweep_path = forms.ChoiceField(choices=[("", "no sweep"), *[(p, p) for p in SWEEPABLE]], required=False,
                                   label="sweep field")
    sweep_values = forms.CharField(required=False, max_length=400, help_text="comma-separated, e.g. 6, 8, 10, 12")
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    source = forms.CharField(required=False, max_length=40)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = Policy.objects.latest_versions()

    def clean(self):
        data = super().clean()
        try:
            config = json.loads(data.get("config") or "")
        except json.JSONDecodeError as exc:
            self.add_error("config", f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")
            return data
        if isinstance(config, dict):
            config = {k: v for k, v in config.items() if k not in _COLUMNS}
        data["config_obj"] = config
        values: list[float] = []
        raw = (data.get("sweep_values") or "").strip()
        if data.get("sweep_path"):
            try:
                values = [float(v) if "." in v else int(v) for v in (x.strip() for x in raw.split(",")) if v]
            except ValueError:
                self.add_error("sweep_values", "numbers separated by commas")
            if not values:
                self.add_error("sweep_values", "give the values to sweep")
        data["values"] = values
        return data


def _config_of(policy) -> dict:
    return {k: v for k, v in policy.to_dict().items() if k not in _COLUMNS}


@login_required
@require_http_methods(["GET", "POST"])
def whatif_new(request: HttpRequest) -> HttpResponse:
    base = None
    if request.method == "GET" and request.GET.get("policy"):
        base = Policy.objects.filter(name=request.GET["policy"]).order_by("-version").first()
    initial = {"policy": base, "config": json.dumps(_config_of(base.as_policy() if base else DEFAULT_POLICY), indent=2),
               "sweep_path": "ladder.stop_streak", "sweep_values": "6, 8, 10, 12, 14"}
    form = WhatIfForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = whatif_create(
                user=request.user, config=data["config_obj"], sweep_path=data["sweep_path"],
                sweep_values=data["values"], base_policy=data["policy"],
                filters={k: data[k] for k in ("task", "model", "source") if data[k]},
            )
        except PolicyError as exc:
            form.add_error("sweep_values" if exc.field == "sweep" or exc.field == data["sweep_path"] else "config",
                           str(exc))
        except WhatIfError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("whatif_job", job_id=job.pk)
    jobs = WhatIfJob.objects.order_by("-created_at").only("id", "created_at", "status", "sweep_path", "total_runs")[:10]
    return render(request, "runs/whatif.html", {"form": form, "jobs": jobs},
                  status=400 if request.method == "POST" else 200)


def _job_context(job: WhatIfJob) -> dict:
    rows = job.result or []
    curve = None
    if rows:
        def rate(n, d):
            return n / d if d else None

        labels = [str(r["value"]) if r["value"] is not None else "policy" for r in rows]
        curve = {
            "data": [
                {"type": "scatter", "mode": "lines+markers+text", "name": "by reviewers' labels", "text": labels,
                 "textposition": "top center",
                 "x": [rate(r["wrongly_total"] - r["wrongly_spared"], r["wrongly_total"]) for r in rows],
                 "y": [rate(r["justified_caught"], r["justified_total"]) for r in rows]},
                {"type": "scatter", "mode": "lines+markers+text", "name": "by the runs' outcomes", "text": labels,
                 "textposition": "bottom center",
                 "x": [rate(r["stopped_succeeded"], r["runs"]) for r in rows],
                 "y": [rate(r["stopped_failed"], r["runs"]) for r in rows]},
            ],
            "layout": {"title": {"text": f"Trade-off{' over ' + job.sweep_path if job.sweep_path else ''}",
                                 "font": {"size": 14}}, "height": 340,
                       "xaxis": {"title": {"text": "cost: wrongly-killed still killed / stops of runs that succeeded"}},
                       "yaxis": {"title": {"text": "benefit: justified still caught / stops of failed runs"}},
                       "margin": {"l": 60, "r": 10, "t": 40, "b": 50}, "legend": {"orientation": "h", "y": -0.25}},
        }
    return {"job": job, "rows": rows, "curve": curve}


@login_required
@require_GET
def whatif_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(WhatIfJob, pk=job_id)
    context = _job_context(job)
    if request.htmx:
        response = render(request, "runs/_whatif_result.html", context)
        if job.status in (WhatIfJob.Status.DONE, WhatIfJob.Status.ERROR):
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "runs/whatif_job.html", context)


@login_required
@require_POST
def whatif_save(request: HttpRequest, job_id: int, position: int) -> HttpResponse:
    """Save one replayed policy as the next version of its base policy."""
    job = get_object_or_404(WhatIfJob, pk=job_id)
    if not 0 <= position < len(job.policies):
        return HttpResponse("no such policy in this what-if", status=404)
    name = job.base_policy.name if job.base_policy else "default"
    config = {k: v for k, v in job.policies[position].items() if k not in _COLUMNS}
    with transaction.atomic():
        last = Policy.objects.select_for_update().filter(name=name).order_by("-version").first()
        value = job.sweep_values[position] if job.sweep_values else None
        saved = Policy.objects.create(
            name=name, version=(last.version + 1) if last else 1, config=config, created_by=request.user,
            description=f"from what-if {job.pk}" + (f": {job.sweep_path} = {value}" if job.sweep_path else ""),
        )
    return redirect(f"/policies/#policy-{saved.pk}")
