"""The dashboard (issue 7): "is it getting better?" from per-run summaries."""

from __future__ import annotations

import csv
from datetime import date, timedelta
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from runs.core import access
from runs.core import charts as charts_
from runs.core.csv_cells import safe_row
from runs.core.terms import term
from runs.dashboard import selectors as dashboard
from runs.dashboard.figures import page_figures
from runs.dashboard.forms import DashboardForm
from runs.launch.selectors import RunFilters, runs_filtered

_LEGEND = {"orientation": "h", "y": -0.3}

# What an empty chart says instead of drawing empty axes.
EMPTY = {
    "context": gettext_lazy("No model turns with token counts in this selection."),
    "false_kills": gettext_lazy("No interruption has been labelled yet: label some in the review queue."),
    "detectors": gettext_lazy("No run in this selection was interrupted."),
    "tiers": gettext_lazy("No run in this selection was interrupted."),
}


def _runs_url(f: RunFilters, **extra) -> str:
    """The run list behind a bar: the dashboard's filters and the bar's own."""
    return reverse("runs:list") + "?" + f.query(**extra)


# What a click on a chart does, said under the charts whose marks link to
# their runs (a chart that links nothing says nothing).
HINTS = {
    "false_kills": gettext_lazy("click a bar for its runs"),
    "histogram": gettext_lazy("click a bar for its runs"),
    "detectors": gettext_lazy("click a bar for its runs"),
    "tiers": gettext_lazy("click a bar for its runs"),
    "over_time": gettext_lazy("click a point for that day's runs"),
}


def _charts(f: RunFilters, data: dict) -> dict[str, dict]:
    charts = {
        "context": _context_chart(data),
        "false_kills": _false_kill_chart(f, data),
        "histogram": _histogram(f, data),
        "detectors": _interventions(f, data["detectors"], "detector", charts_.RED),
        "tiers": _interventions(f, data["tiers"], "tier", charts_.ORANGE),
        "over_time": _over_time(f, data),
    }
    for name, fig in charts.items():
        if name in EMPTY and charts_.is_empty(fig):
            fig["empty"] = str(EMPTY[name])
        elif name in HINTS:
            fig["hint"] = str(HINTS[name])
    return charts


def _context_chart(data: dict) -> dict:
    ctx, trunc = data["context"], data["truncated"]
    traces = [charts_.lines([s for s, _m, _t in ctx], [round(m, 1) for _s, m, _t in ctx], markers=False,
                            name=_("mean prompt tokens"), line={"color": charts_.BLUE})]
    if trunc:
        traces.append(charts_.bar([s for s, _n in trunc], [n for _s, n in trunc], name=_("observations truncated"),
                                  yaxis="y2", marker={"color": "rgba(217,72,15,0.45)"}))
    return charts_.figure(traces, title=_("Context pressure: prompt size by step index"), x_title=_("step index"),
                          y_title=_("prompt tokens"), legend=_LEGEND)


def _false_kill_chart(f: RunFilters, data: dict) -> dict:
    fk = [r for r in data["false_kills"] if r["labelled"]]
    return charts_.figure(
        [charts_.bar([term(r["detector"]) for r in fk], [r["false_kill_rate"] for r in fk],
                     text=[f"{r['wrongly']}/{r['labelled']}" for r in fk], textposition="outside",
                     # The count above a full bar stays in sight: room above 1 and no clipping.
                     cliponaxis=False, customdata=[_runs_url(f, detector=r["detector"]) for r in fk],
                     marker={"color": charts_.DARK_RED})],
        title=_("False-kill rate by detector (reviewers' labels)"), x_title=_("detector"),
        y_title=_("wrongly killed / labelled"), yaxis={"range": [0, 1.2], "tickvals": [0, 0.25, 0.5, 0.75, 1]},
        legend=_LEGEND)


def _histogram(f: RunFilters, data: dict) -> dict:
    hist, last = data["histogram"], dashboard.HISTOGRAM_MAX
    links = [_runs_url(f, steps_min=s, **({} if s == last else {"steps_max": s})) for s, _n in hist]
    return charts_.figure(
        [charts_.bar([s for s, _n in hist], [n for _s, n in hist], customdata=links, marker={"color": charts_.BLUE},
                     hovertemplate=_("%{x} steps: %{y} runs") + "<extra></extra>")],
        title=_("Step count per run"), x_title=_("steps (%(last)s = %(last)s or more)") % {"last": last},
        y_title=_("runs"), legend=_LEGEND)


def _interventions(f: RunFilters, counts: list[tuple[str, int]], param: str, colour: str) -> dict:
    return charts_.figure(
        [charts_.bar([term(k) for k, _n in counts], [n for _k, n in counts],
                     customdata=[_runs_url(f, **{param: k}) for k, _n in counts], marker={"color": colour})],
        title=_("Runs with an intervention, by %(param)s") % {"param": term(param)}, x_title=term(param),
        y_title=_("runs"), legend=_LEGEND)


# Up to this many days, the per-day axis has a tick per day; longer periods
# let plotly space the ticks (never finer than a day: the axis range is whole days).
DAILY_TICKS_MAX_DAYS = 14


def _day_axis(since: date, until: date) -> dict:
    """A date axis over the dashboard's period, labelled with dates: plotly
    would zoom a single day down to milliseconds."""
    days = (until - since).days + 1
    axis = {"type": "date", "range": [f"{since - timedelta(days=1)} 12:00", f"{until} 12:00"],
            # d3 time formats, in the page's language (plotly's own month names are English).
            "tickformat": _("%b %-d") if days <= 366 else _("%b %Y"), "hoverformat": "%Y-%m-%d"}
    if days <= DAILY_TICKS_MAX_DAYS:
        axis["dtick"] = 86_400_000  # one day, in ms
    return axis


def _over_time(f: RunFilters, data: dict) -> dict:
    days = data["over_time"]
    x = [d["day"].isoformat() for d in days]
    default_since, default_until = dashboard.default_period()
    since, until = f.since or default_since, f.until or default_until
    return charts_.figure(
        [charts_.lines(x, [d["success_rate"] for d in days], name=_("success rate"),
                       customdata=[_runs_url(f, since=day, until=day) for day in x]),
         charts_.lines(x, [d["over_max_rate"] for d in days], name=_("over-max-step rate"),
                       customdata=[_runs_url(f, since=day, until=day, stopped_by="max_steps") for day in x])],
        title=_("Success and over-max-step rate per day"), x_title=_("day (UTC)"), y_title=_("rate"), yaxis={"range": [-0.03, 1.03]},
        xaxis=_day_axis(since, until), legend=_LEGEND)


CSV_TABLES = ("histogram", "detectors", "tiers", "over_time", "context", "false_kills", "by_task", "by_model",
              "by_policy", "by_tag")


class _SafeWriter:
    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def writerow(self, row: Any) -> None:
        self.writer.writerow(safe_row(row))

    def writerows(self, rows: Any) -> None:
        for row in rows:
            self.writerow(row)


def _csv(name: str, data: dict) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="dashboard-{name}.csv"'
    writer = _SafeWriter(csv.writer(response))
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
                         "mean_steps", "over_max", "cost_usd"])
        writer.writerows([g["key"], g["runs"], g["scored"], g["successes"], g["success_rate"], g["k"], g["pass_at_k"],
                          g["pass_hat_k"], g["mean_steps"], g["over_max"], "" if g.get("cost") is None else round(g["cost"], 6)]
                         for g in data[name])
    return response


@login_required
@require_GET
def dashboard_page(request: HttpRequest) -> HttpResponse:
    if request.GET:
        form = DashboardForm(request.GET)
        if not form.is_valid():
            return render(request, "dashboard/page.html", {"form": form, "tasks": access.tasks_for(request).only("slug")},
                          status=400)
    else:
        since, until = dashboard.default_period()
        form = DashboardForm({"since": since, "until": until})
        form.is_valid()
    f = form.filters()
    qs = runs_filtered(access.runs_for(request), f)
    data = page_figures(qs, access.project_id(request), f)
    export = request.GET.get("export")
    if export:
        if export not in CSV_TABLES:
            return HttpResponse(f"export must be one of {', '.join(CSV_TABLES)}", status=400,
                                content_type="text/plain; charset=utf-8")
        return _csv(export, data)
    context = {"form": form, "filters": f, "run_list_url": _runs_url(f), "tasks": access.tasks_for(request).only("slug"),
               "charts": _charts(f, data), "query": request.GET.urlencode(), "K": dashboard.DASHBOARD_K, **data}
    return render(request, "dashboard/page.html", context)
