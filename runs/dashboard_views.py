"""The dashboard (issue 7): "is it getting better?" from per-run summaries."""

from __future__ import annotations

import csv
from datetime import timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs import dashboard
from runs.models import Run, Task

# The longest period one request may aggregate; longer asks are refused with a
# message rather than silently clipped.
MAX_PERIOD_DAYS = 3660


class DashboardForm(forms.Form):
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    mode = forms.ChoiceField(choices=[("", "any mode"), *Run.Mode.choices], required=False)
    policy = forms.CharField(required=False, max_length=80)

    def clean(self):
        data = super().clean()
        default = dashboard.Filters.default()
        data["since"] = data.get("since") or default.since
        data["until"] = data.get("until") or default.until
        if data["since"] > data["until"]:
            self.add_error("since", "since must be on or before until")
        elif data["until"] - data["since"] > timedelta(days=MAX_PERIOD_DAYS):
            self.add_error("since", f"a period of at most {MAX_PERIOD_DAYS} days")
        return data

    def filters(self) -> dashboard.Filters:
        d = self.cleaned_data
        return dashboard.Filters(since=d["since"], until=d["until"], task=d.get("task") or "", model=d.get("model") or "",
                                 mode=d.get("mode") or "", policy=d.get("policy") or "")


def _fig(data: list[dict], title: str, xaxis: str, yaxis: str, yrange: list[float] | None = None) -> dict:
    y = {"title": {"text": yaxis}}
    if yrange:
        y["range"] = yrange
    layout = {"title": {"text": title, "font": {"size": 14}}, "height": 260,
              "margin": {"l": 50, "r": 40, "t": 36, "b": 40}, "xaxis": {"title": {"text": xaxis}}, "yaxis": y,
              "legend": {"orientation": "h", "y": -0.3}}
    if any(trace.get("yaxis") == "y2" for trace in data):
        layout["yaxis2"] = {"overlaying": "y", "side": "right", "showgrid": False, "rangemode": "tozero"}
    return {"data": data, "layout": layout}


# What an empty chart says instead of drawing empty axes.
EMPTY = {
    "context": "No model turns with token counts in this selection.",
    "false_kills": "No interruption has been labelled yet: label some in the review queue.",
    "detectors": "No run in this selection was interrupted.",
    "tiers": "No run in this selection was interrupted.",
}


def _charts(f: dashboard.Filters, data: dict) -> dict[str, dict]:
    charts = _all_charts(f, data)
    for name, message in EMPTY.items():
        if not any(trace.get("x") for trace in charts[name]["data"]):
            charts[name]["empty"] = message
    return charts


def _all_charts(f: dashboard.Filters, data: dict) -> dict[str, dict]:
    hist = data["histogram"]
    last = dashboard.HISTOGRAM_MAX
    hist_links = [f.run_list_url(steps_min=s, **({} if s == last else {"steps_max": s})) for s, _ in hist]
    det = data["detectors"]
    tiers = data["tiers"]
    days = data["over_time"]
    ctx = data["context"]
    trunc = data["truncated"]
    fk = [r for r in data["false_kills"] if r["labelled"]]
    return {
        "context": _fig(
            [{"type": "scatter", "mode": "lines", "name": "mean prompt tokens", "x": [s for s, _, _ in ctx],
              "y": [round(m, 1) for _, m, _ in ctx], "line": {"color": "#2456d6"}}]
            + ([{"type": "bar", "name": "observations truncated", "x": [s for s, _ in trunc],
                 "y": [n for _, n in trunc], "yaxis": "y2", "marker": {"color": "rgba(217,72,15,0.45)"}}]
               if trunc else []),
            "Context pressure: prompt size by step index", "step index", "prompt tokens"),
        "false_kills": _fig(
            [{"type": "bar", "x": [r["detector"] for r in fk], "y": [r["false_kill_rate"] for r in fk],
              "text": [f"{r['wrongly']}/{r['labelled']}" for r in fk], "textposition": "outside",
              "customdata": [f.run_list_url(detector=r["detector"]) for r in fk], "marker": {"color": "#8c1d18"}}],
            "False-kill rate by detector (reviewers' labels)", "detector", "wrongly killed / labelled", yrange=[0, 1.05]),
        "histogram": _fig([{"type": "bar", "x": [s for s, _ in hist], "y": [n for _, n in hist],
                            "customdata": hist_links, "marker": {"color": "#2456d6"},
                            "hovertemplate": "%{x} steps: %{y} runs<extra></extra>"}],
                          "Step count per run", f"steps ({last} = {last} or more)", "runs"),
        "detectors": _fig([{"type": "bar", "x": [d for d, _ in det], "y": [n for _, n in det],
                            "customdata": [f.run_list_url(detector=d) for d, _ in det], "marker": {"color": "#b3261e"}}],
                          "Runs with an intervention, by detector", "detector", "runs"),
        "tiers": _fig([{"type": "bar", "x": [t for t, _ in tiers], "y": [n for _, n in tiers],
                        "customdata": [f.run_list_url(tier=t) for t, _ in tiers], "marker": {"color": "#d9480f"}}],
                      "Runs with an intervention, by tier", "tier", "runs"),
        "over_time": _fig(
            [{"type": "scatter", "mode": "lines+markers", "name": "success rate",
              "x": [d["day"].isoformat() for d in days], "y": [d["success_rate"] for d in days],
              "customdata": [f.run_list_url(since=d["day"].isoformat(), until=d["day"].isoformat()) for d in days]},
             {"type": "scatter", "mode": "lines+markers", "name": "over-max-step rate",
              "x": [d["day"].isoformat() for d in days], "y": [d["over_max_rate"] for d in days],
              "customdata": [f.run_list_url(since=d["day"].isoformat(), until=d["day"].isoformat(),
                                            stopped_by="max_steps") for d in days]}],
            "Success and over-max-step rate per day", "day", "rate", yrange=[0, 1.02]),
    }


CSV_TABLES = ("histogram", "detectors", "tiers", "over_time", "context", "false_kills", "by_task", "by_model",
              "by_policy")


def _csv(name: str, data: dict) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="dashboard-{name}.csv"'
    writer = csv.writer(response)
    if name == "histogram":
        writer.writerow(["steps", "runs"])
        writer.writerows(data["histogram"])
    elif name in ("detectors", "tiers"):
        writer.writerow([name[:-1], "runs"])
        writer.writerows(data[name])
    elif name == "context":
        truncated = dict(data["truncated"])
        writer.writerow(["step", "mean_prompt_tokens", "model_turns", "observations_truncated"])
        writer.writerows([step, round(mean, 1), n, truncated.get(step, 0)] for step, mean, n in data["context"])
    elif name == "false_kills":
        writer.writerow(["detector", "interruptions", "labelled", "justified", "wrongly_killed", "false_kill_rate"])
        writer.writerows([r["detector"], r["items"], r["labelled"], r["justified"], r["wrongly"], r["false_kill_rate"]]
                         for r in data["false_kills"])
    elif name == "over_time":
        writer.writerow(["day", "runs", "success_rate", "over_max_rate", "mean_steps"])
        writer.writerows([d["day"], d["runs"], d["success_rate"], d["over_max_rate"], d["mean_steps"]]
                         for d in data["over_time"])
    else:
        writer.writerow(["group", "runs", "scored", "successes", "success_rate", "k", "pass_at_k", "pass_hat_k",
                         "mean_steps", "over_max"])
        writer.writerows([g["key"], g["runs"], g["scored"], g["successes"], g["success_rate"], g["k"], g["pass_at_k"],
                          g["pass_hat_k"], g["mean_steps"], g["over_max"]] for g in data[name])
    return response


@login_required
@require_GET
def dashboard_page(request: HttpRequest) -> HttpResponse:
    form = DashboardForm(request.GET or None)
    if request.GET and not form.is_valid():
        return render(request, "runs/dashboard.html", {"form": form, "tasks": Task.objects.only("slug")}, status=400)
    if not request.GET:
        default = dashboard.Filters.default()
        form = DashboardForm({"since": default.since, "until": default.until})
        form.is_valid()
    f = form.filters()
    qs = f.runs()
    data = {**dashboard.aggregate(qs), **dashboard.array_figures(qs), "false_kills": dashboard.false_kills(qs)}
    fk = data["false_kills"]
    labelled = sum(r["labelled"] for r in fk)
    data["totals"]["false_kill_rate"] = sum(r["wrongly"] for r in fk) / labelled if labelled else None
    data["totals"]["labelled"] = labelled
    export = request.GET.get("export")
    if export:
        if export not in CSV_TABLES:
            return HttpResponse(f"export must be one of {', '.join(CSV_TABLES)}", status=400)
        return _csv(export, data)
    context = {"form": form, "filters": f, "tasks": Task.objects.only("slug"), "charts": _charts(f, data),
               "query": request.GET.urlencode(), "K": dashboard.DASHBOARD_K, **data}
    return render(request, "runs/dashboard.html", context)
