"""The what-if page: replay a policy or a threshold sweep over stored runs."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.core import access, charts
from runs.core.error_text import POLICY_PROTECTED, QUEUE, policy_error, translated
from runs.core.queue import QueueUnavailable
from runs.policies.fields import field_doc
from runs.policies.services import PolicyProtected, policy_config, policy_version_save
from runs.whatif.forms import WhatIfForm
from runs.whatif.models import WhatIfJob
from runs.whatif.reading import reading
from runs.whatif.services import whatif_create
from tracing.core.watchdog import DEFAULT_POLICY, PolicyError


@login_required
@require_http_methods(["GET", "POST"])
def whatif_new(request: HttpRequest) -> HttpResponse:
    project = access.project(request)
    if request.method == "POST":
        access.require_reviewer(request)
    base = None
    # Postgres refuses NUL even in a lookup; no policy name holds one.
    if request.method == "GET" and request.GET.get("policy") and "\x00" not in request.GET["policy"]:
        base = access.policies_for(request).filter(name=request.GET["policy"]).order_by("-version").first()
    initial = {"policy": base, "config": json.dumps(policy_config(base.as_policy() if base else DEFAULT_POLICY), indent=2),
               "sweep_path": "ladder.stop_streak", "sweep_values": "6, 8, 10, 12, 14"}
    form = WhatIfForm(request.POST or None, initial=initial, project_id=project.pk)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = whatif_create(
                user=request.user, project_id=project.pk, config=data["config_obj"], sweep_path=data["sweep_path"],
                sweep_values=data["values"], base_policy=data["policy"],
                filters={k: data[k] for k in ("task", "model", "source") if data[k]},
            )
        except PolicyError as exc:
            form.add_error("sweep_values" if exc.field == "sweep" or exc.field == data["sweep_path"] else "config",
                           policy_error(exc))
        except QueueUnavailable as exc:
            form.add_error(None, translated(str(exc), QUEUE))
        else:
            return redirect("whatif_job", job_id=job.pk)
    jobs = WhatIfJob.objects.filter(project=project).order_by("-created_at").only("id", "created_at", "status", "sweep_path", "total_runs")[:10]
    return render(request, "whatif/page.html", {"form": form, "jobs": jobs},
                  status=400 if request.method == "POST" else 200)


def _rate(n: int, d: int) -> float | None:
    return n / d if d else None


def _curve(job: WhatIfJob, rows: list[dict]) -> dict:
    """The trade-off of the replayed policies: what each value catches and what
    it costs, as shares, one point per value spread along its own axis."""
    labels = [str(r["value"]) if r["value"] is not None else "as given" for r in rows]

    def share(name: str, values: list[float | None], colour: str, dash: str = "solid") -> dict:
        return charts.lines(labels, values, name=name, line={"color": colour, "dash": dash},
                            hovertemplate="%{x}: %{y:.0%}<extra>" + name + "</extra>")

    traces = [
        share(_("runs interrupted"), [_rate(r["interrupted"], r["runs"]) for r in rows], charts.BLUE),
        share(_("stops of wrong runs (benefit)"), [_rate(r["stopped_failed"], r["runs"]) for r in rows],
              charts.GREEN),
        share(_("stops of correct runs (cost)"), [_rate(r["stopped_succeeded"], r["runs"]) for r in rows],
              charts.RED),
    ]
    if any(r["justified_total"] or r["wrongly_total"] for r in rows):
        traces += [
            share(_("justified interruptions still caught"),
                  [_rate(r["justified_caught"], r["justified_total"]) for r in rows], charts.GREEN, "dot"),
            share(_("wrongly killed still killed"),
                  [_rate(r["wrongly_total"] - r["wrongly_spared"], r["wrongly_total"]) for r in rows], charts.RED,
                  "dot"),
        ]
    doc = field_doc(job.sweep_path) if job.sweep_path else None
    return charts.figure(
        traces, height=380,  # titled by the page (a plotly title and a top legend collide when narrow)
        # Two short lines: one long line overflows a phone-wide chart.
        x_title=(f"{job.sweep_path}<br>({doc.label})" if doc else job.sweep_path) or _("policy"),
        y_title=_("share"), xaxis={"type": "category"}, yaxis={"range": [-0.03, 1.05], "tickformat": ".0%"},
        # The legend above the plot: below it, it ran into the axis title on a narrow screen.
        margin={"l": 70, "r": 20, "t": 20, "b": 60}, legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
    )


@login_required
@require_GET
def whatif_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(WhatIfJob, pk=job_id, project_id=access.project_id(request))
    rows = job.result or []
    context = {"job": job, "rows": rows, "curve": _curve(job, rows) if rows else None,
               "can_save": access.is_admin(request),
               "notes": reading(job.sweep_path, rows)}
    if request.htmx:
        response = render(request, "whatif/_result.html", context)
        if job.status in (WhatIfJob.Status.DONE, WhatIfJob.Status.ERROR):
            response.status_code = HttpResponseStopPolling.status_code
        return response
    return render(request, "whatif/job.html", context)


@login_required
@require_POST
def whatif_save(request: HttpRequest, job_id: int, position: int) -> HttpResponse:
    """Save one replayed policy as the next version of its base policy (project admins)."""
    job = get_object_or_404(WhatIfJob, pk=job_id, project_id=access.project_id(request))
    access.require_admin(request)
    if not 0 <= position < len(job.policies):
        return HttpResponse(_("no such policy in this what-if"), status=404, content_type="text/plain; charset=utf-8")
    value = job.sweep_values[position] if job.sweep_values else None
    try:
        saved = policy_version_save(
            project_id=job.project_id, name=job.base_policy.name if job.base_policy else "default",
            config=job.policies[position], created_by=request.user,
            description=f"from what-if {job.pk}" + (f": {job.sweep_path} = {value}" if job.sweep_path else ""),
        )
    except PolicyProtected as exc:
        return HttpResponse(translated(str(exc), POLICY_PROTECTED), status=400, content_type="text/plain; charset=utf-8")
    return redirect(f"{reverse('policy_list')}#policy-{saved.pk}")
