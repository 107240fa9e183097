"""The what-if page: replay a policy or a threshold sweep over stored runs."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs import charts
from runs.policies.models import Policy
from runs.policies.services import policy_config, policy_version_save
from runs.queue import QueueUnavailable
from runs.whatif.forms import WhatIfForm
from runs.whatif.models import WhatIfJob
from runs.whatif.services import whatif_create
from tracing.watchdog import DEFAULT_POLICY, PolicyError


@login_required
@require_http_methods(["GET", "POST"])
def whatif_new(request: HttpRequest) -> HttpResponse:
    base = None
    if request.method == "GET" and request.GET.get("policy"):
        base = Policy.objects.filter(name=request.GET["policy"]).order_by("-version").first()
    initial = {"policy": base, "config": json.dumps(policy_config(base.as_policy() if base else DEFAULT_POLICY), indent=2),
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
        except QueueUnavailable as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("whatif_job", job_id=job.pk)
    jobs = WhatIfJob.objects.order_by("-created_at").only("id", "created_at", "status", "sweep_path", "total_runs")[:10]
    return render(request, "whatif/page.html", {"form": form, "jobs": jobs},
                  status=400 if request.method == "POST" else 200)


def _rate(n: int, d: int) -> float | None:
    return n / d if d else None


def _curve(job: WhatIfJob, rows: list[dict]) -> dict:
    """The trade-off of the replayed policies: what they cost against what they catch."""
    labels = [str(r["value"]) if r["value"] is not None else "policy" for r in rows]
    return charts.figure(
        [charts.lines([_rate(r["wrongly_total"] - r["wrongly_spared"], r["wrongly_total"]) for r in rows],
                      [_rate(r["justified_caught"], r["justified_total"]) for r in rows],
                      name="by reviewers' labels", text=labels, mode="lines+markers+text", textposition="top center"),
         charts.lines([_rate(r["stopped_succeeded"], r["runs"]) for r in rows],
                      [_rate(r["stopped_failed"], r["runs"]) for r in rows],
                      name="by the runs' outcomes", text=labels, mode="lines+markers+text",
                      textposition="bottom center")],
        title=f"Trade-off{' over ' + job.sweep_path if job.sweep_path else ''}", height=340,
        x_title="cost: wrongly-killed still killed / stops of correct runs",
        y_title="benefit: justified still caught / stops of wrong runs",
        margin={"l": 60, "r": 10, "t": 40, "b": 50}, legend={"orientation": "h", "y": -0.25},
    )


@login_required
@require_GET
def whatif_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(WhatIfJob, pk=job_id)
    rows = job.result or []
    context = {"job": job, "rows": rows, "curve": _curve(job, rows) if rows else None}
    if request.htmx:
        response = render(request, "whatif/_result.html", context)
        if job.status in (WhatIfJob.Status.DONE, WhatIfJob.Status.ERROR):
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "whatif/job.html", context)


@login_required
@require_POST
def whatif_save(request: HttpRequest, job_id: int, position: int) -> HttpResponse:
    """Save one replayed policy as the next version of its base policy."""
    job = get_object_or_404(WhatIfJob, pk=job_id)
    if not 0 <= position < len(job.policies):
        return HttpResponse("no such policy in this what-if", status=404)
    value = job.sweep_values[position] if job.sweep_values else None
    saved = policy_version_save(
        name=job.base_policy.name if job.base_policy else "default", config=job.policies[position],
        description=f"from what-if {job.pk}" + (f": {job.sweep_path} = {value}" if job.sweep_path else ""),
        created_by=request.user,
    )
    return redirect(f"{reverse('policy_list')}#policy-{saved.pk}")
