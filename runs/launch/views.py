"""The run list, the run page (timeline, live poll, stop, export), new runs and "what if…" forks."""

from __future__ import annotations

import json
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.breaks.selectors import run_panel
from runs.core import access
from runs.core.error_text import QUEUE, translated
from runs.core.form_fields import MODES_OF_PROVIDER
from runs.core.models import Run, Task
from runs.core.paging import keyset_page
from runs.core.prices import PriceTable
from runs.core.queue import QueueUnavailable
from runs.health.sweeps import stalled_age
from runs.launch import services
from runs.launch.forms import NewRunForm, RunFilterForm
from runs.launch.selectors import runs_filtered, steps_after, trajectory
from runs.launch.span_tree import tree_html
from runs.search.selectors import RunSearch, search_runs
from tracing.core import shown_json
from tracing.core.waterfall import MAX_BARS, chart, span_tree
from tracing.store.models import ModelCall, Step
from tracing.store.timeline import run_calls, span_rows

RUNS_PER_PAGE = 50
# Steps per request on the run page: enough to fill a screen several times,
# small enough that a 5,000-step run never arrives as one huge page.
STEPS_PER_PAGE = 200
# The first page grows to reach the anchor break, up to this many steps.
MAX_INITIAL_STEPS = 2000
# The id of the run list's "older runs" row: htmx names it in HX-Target when
# it asks for the next page, which is answered with rows only.
MORE_ROWS_ID = "more-runs"
# The run list's live rows refresh this often: a run's status and step count
# move every second or so, and one request covers every live row on the page.
LIVE_ROWS_EVERY = "2s"

# Sortable columns of the run list: URL name -> model field. Every sort is a
# keyset on (field, id), each backed by an index (see Run.Meta).
SORT_FIELDS = {"created": "created_at", "steps": "step_count", "tokens": "tokens_total"}
LIST_DEFERRED = ("context", "metadata", "anchor_evidence", "anchor_findings", "context_steps", "context_tokens", "truncated_steps")


def _parse_cursor(raw: str, field: str) -> tuple[datetime | int, int] | None:
    value, _, pk = raw.rpartition("_")
    try:
        return (datetime.fromisoformat(value) if field == "created_at" else int(value)), int(pk)
    except ValueError:
        return None


def _cursor(run: Run, field: str) -> str:
    value = getattr(run, field)
    return f"{value.isoformat() if field == 'created_at' else value}_{run.pk}"


def _sorted_page(qs: QuerySet[Run], form: RunFilterForm, sort: str) -> tuple[QuerySet[Run], str]:
    """The runs ordered by `sort` ("-steps"...) from the form's cursor on; and the sort field."""
    descending = sort.startswith("-")
    field = SORT_FIELDS.get(sort.lstrip("-"), "created_at")
    qs = qs.annotate(tokens_total=F("prompt_tokens") + F("completion_tokens"))
    qs = qs.order_by(f"-{field}", "-id") if descending else qs.order_by(field, "id")
    before = form.cleaned_data["before"]
    if before:
        cursor = _parse_cursor(before, field)
        if cursor is None:
            form.add_error("before", "Not a page cursor; start from the first page.")
            return qs, field
        value, pk = cursor
        op = "lt" if descending else "gt"
        qs = qs.filter(Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"id__{op}": pk}))
    return qs, field


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    form = RunFilterForm(request.GET)
    sort = form.data.get("sort") or "-created"
    # The list shows none of the run's large JSON columns (a context alone can be tens of KB).
    qs = access.runs_for(request).select_related("task", "policy").defer(*LIST_DEFERRED)
    field = "created_at"
    search = RunSearch()
    if form.is_valid():
        qs, search = search_runs(qs, form.cleaned_data["q"], text_only=form.cleaned_data["within"] == "text")
        qs, field = _sorted_page(runs_filtered(qs, form.filters()), form, sort)
    else:
        qs = qs.none()
    runs, next_query = keyset_page(qs, RUNS_PER_PAGE, request, lambda run: _cursor(run, field))
    prices = PriceTable.load()  # one read for the page, not one per row
    for run in runs:
        run.price = prices.price_for(run.provider, run.model_name)
    search.attach_hits(runs)
    context = {
        "form": form,
        "search": search,
        "runs": runs,
        "next_query": next_query,
        "more_id": MORE_ROWS_ID,
        "sort_links": _sort_links(request, sort),
        "tasks": access.tasks_for(request).only("slug"),
        "now": timezone.now(),
        "live_ids": [run.pk for run in runs if run.is_live],
        "live_every": LIVE_ROWS_EVERY,
        # Called by the full page only (one query): the more-rows partial shows no banner.
        "sweep_stalled_s": stalled_age,
    }
    if request.htmx.target == MORE_ROWS_ID:
        return render(request, "launch/_run_rows.html", context)
    return render(request, "launch/list.html", context)


@login_required
@require_GET
def run_list_live(request: HttpRequest) -> HttpResponse:
    """The run list's live rows, re-rendered in one query and swapped in by id;
    the poller comes back with the runs still live, or stops (286) when none is."""
    raw = request.GET.get("ids", "")
    ids = raw.split(",") if raw else []
    if not ids or len(ids) > RUNS_PER_PAGE or not all(i.isdigit() and len(i) < 19 for i in ids):
        return HttpResponse(f"ids must be 1 to {RUNS_PER_PAGE} run ids separated by commas",
                            status=400, content_type="text/plain; charset=utf-8")
    runs = list(access.runs_for(request).select_related("task", "policy").defer(*LIST_DEFERRED)
                .filter(pk__in=[int(i) for i in ids]).order_by("-created_at", "-id"))
    prices = PriceTable.load()  # one read, not one per row (the cost column)
    for run in runs:
        run.price = prices.price_for(run.provider, run.model_name)
    live_ids = [run.pk for run in runs if run.is_live]
    response = render(request, "launch/_live_rows.html",
                      {"runs": runs, "live_ids": live_ids, "live_every": LIVE_ROWS_EVERY, "now": timezone.now()})
    if not live_ids:
        response.status_code = HttpResponseStopPolling.status_code
    return response


def _sort_links(request: HttpRequest, current: str) -> dict[str, dict[str, str]]:
    """Per sortable column: the URL that sorts by it (descending first, then
    ascending) and the arrow showing the current order."""
    links = {}
    for name in SORT_FIELDS:
        params = request.GET.copy()
        params.pop("before", None)
        params["sort"] = name if current == f"-{name}" else f"-{name}"
        arrow = "▼" if current == f"-{name}" else "▲" if current == name else ""
        links[name] = {"url": "?" + params.urlencode(), "arrow": arrow}
    return links


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access.run_for(request, run_id, "task", "policy")
    # ?step=N (a waterfall bar, a span): that step must be among the loaded ones.
    raw_step = request.GET.get("step", "")
    if raw_step and not (raw_step.isdigit() and len(raw_step) < 10):
        return HttpResponse("step must be a step index (0, 1, 2...)", status=400,
                            content_type="text/plain; charset=utf-8")
    # The page opens at the anchor break, so it must be among the loaded steps.
    wanted = max(run.first_anchor_break or 0, int(raw_step or 0))
    upto = min(wanted + STEPS_PER_PAGE // 4, MAX_INITIAL_STEPS)
    inherited = trajectory(run, hi=run.fork_from - 1, limit=MAX_INITIAL_STEPS) if run.parent_id else []
    steps = trajectory(run, lo=run.fork_from or 0, limit=max(STEPS_PER_PAGE, upto))
    return render(request, "launch/detail.html",
                  {**_timeline_context(run, steps), "inherited": inherited, "pressure": _pressure(run),
                   "can_stop": access.can_stop(request, run), "can_label": access.is_reviewer(request),
                   "breaks": run_panel(run, request.user)})


@login_required
@require_GET
def run_waterfall(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run's model and tool calls on a time axis (loaded when its panel opens)."""
    run = access.run_for(request, run_id)
    calls, source = run_calls(run)
    context = {"run": run, "run_url": run.get_absolute_url(), "chart": chart(calls), "source": source,
               "max_bars": MAX_BARS}
    return render(request, "launch/_waterfall.html" if request.htmx else "launch/waterfall.html", context)


@login_required
@require_GET
def run_span_tree(request: HttpRequest, run_id: int) -> HttpResponse:
    """An OTLP run's spans as the trace nested them, each linked to the step it became."""
    run = access.run_for(request, run_id)
    roots, total_ms = span_tree(span_rows(run))
    context = {"run": run, "tree": tree_html(roots, run.get_absolute_url()) if roots else "", "total_ms": total_ms}
    return render(request, "launch/_span_tree.html" if request.htmx else "launch/span_tree.html", context)


def _pressure(run: Run) -> dict | None:
    """The run page's slim chart: prompt tokens per model turn and truncations,
    from the run's summary arrays (no step is read for it)."""
    if not run.context_tokens:
        return None
    last = max(run.step_count - 1, max(run.context_steps, default=0), 1)
    peak = max(run.context_tokens) or 1
    points = " ".join(
        f"{step / last * 1000:.1f},{58 - tok / peak * 54:.1f}"
        for step, tok in zip(run.context_steps, run.context_tokens, strict=False)
    )
    marks = [{"x": round(step / last * 1000, 1), "step": step} for step in run.truncated_steps]
    return {"points": points, "peak": peak, "mid": round(peak / 2), "last": last, "mid_step": round(last / 2),
            "marks": marks, "turns": len(run.context_tokens)}


def _call_steps(run: Run, steps: list[Step]) -> set[int]:
    """The loaded steps that have a model call behind them (the toggle is shown on those)."""
    own = [s.index for s in steps if s.run_id == run.pk]
    if not own:
        return set()
    return set(ModelCall.objects.filter(run=run, step_index__gte=own[0], step_index__lte=own[-1])
               .values_list("step_index", flat=True))


def _timeline_context(run: Run, steps: list[Step]) -> dict:
    last = steps[-1].index if steps else None
    full_page = len(steps) >= STEPS_PER_PAGE
    return {
        "call_steps": _call_steps(run, steps),
        # The call of step N is at call_url + "N/" (runs:call).
        "call_url": reverse("runs:call", args=[run.pk, 0])[:-2],
        "price": run.price,
        "run": run,
        "steps": steps,
        "cursor": last if last is not None else -1,
        # More stored steps than one page: load the next when scrolled to.
        "more_stored": full_page,
        "poll": run.is_live or full_page,
    }


@login_required
@require_GET
def run_steps(request: HttpRequest, run_id: int) -> HttpResponse:
    """Steps after the cursor: the live poll and the next page share this."""
    run = access.run_for(request, run_id, "task", "policy")
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return HttpResponse("after must be an integer step index", status=400, content_type="text/plain; charset=utf-8")
    steps = steps_after(run, after, STEPS_PER_PAGE)
    context = {**_timeline_context(run, steps), "can_stop": access.can_stop(request, run),
               "can_label": access.is_reviewer(request)}
    if not steps:
        context["cursor"] = after
    response = render(request, "launch/_steps_poll.html", context)
    if not steps and not run.is_live:
        # Done and nothing new: htmx stops polling on 286, but the header still
        # needs its final state, so it goes out-of-band in this last answer.
        response.status_code = HttpResponseStopPolling.status_code
    return response


def _spec(form: NewRunForm) -> services.RunSpec:
    data = form.cleaned_data
    task: Task | None = data["task"]
    provider = data["provider"]
    model_name = {"sim": "sim", "local": ""}.get(provider, data["model_name"].strip())
    return services.RunSpec(
        task=task,
        prompt=task.prompt if task else data["prompt"].strip(),
        provider=provider,
        model_name=model_name or "gemma-3-270m",
        mode=data["mode"],
        temperature=data["temperature"],
        max_steps=data["max_steps"],
        max_tokens=data["max_tokens"],
        max_cost=data["max_cost"],
        seed=data["seed"],
        settings={**({"sim": form.sim_settings()} if provider == "sim" else {}), "faults": form.faults()},
        policy=data["policy"],
        labels=data["labels"],
    )


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    project = access.project(request)
    if request.method == "POST":
        access.require_reviewer(request)
    initial = {}
    if request.method == "GET" and request.GET.get("task"):
        slug = request.GET["task"]
        # Postgres refuses NUL even in a lookup; no slug holds one.
        task = access.tasks_for(request).filter(slug=slug).first() if "\x00" not in slug else None
        if task is None:
            raise Http404(_("unknown task"))
        initial["task"] = task
    form = NewRunForm(request.POST or None, initial=initial, project_id=project.pk)
    if request.method == "POST" and form.is_valid():
        spec = _spec(form)
        try:
            runs = services.runs_launch(owner=request.user, project=project, spec=spec,
                                        reruns=form.cleaned_data["reruns"])
        except QueueUnavailable as exc:
            form.add_error(None, _("%(why)s. Nothing was queued; try again when the queue is back.")
                           % {"why": translated(str(exc), QUEUE)})
        else:
            if len(runs) > 1:
                # Reruns land on their comparison, which fills in as they finish.
                messages.success(request, _("Queued %(n)d reruns.") % {"n": len(runs)})
                return redirect("compare:group", group_id=runs[0].group_id)
            return redirect(runs[0])
    status = 400 if request.method == "POST" else 200
    return render(request, "launch/new.html", {"form": form, "modes_of_provider": json.dumps(MODES_OF_PROVIDER)},
                  status=status)


@login_required
@require_POST
def run_stop(request: HttpRequest, run_id: int) -> HttpResponse:
    run = access.run_for(request, run_id, "task", "policy")
    access.require_stop(request, run)
    run = services.run_stop(run=run)
    if request.htmx:
        return render(request, "launch/_run_header.html", {"run": run, "can_stop": True,
                                                           "can_label": access.is_reviewer(request)})
    return redirect(run)


def _export_step(step: Step) -> dict:
    return {
        "index": step.index,
        "kind": step.kind,
        "role": step.role,
        "content": step.text,
        "tool": step.tool or None,
        "args": step.args,
        "meta": step.meta,
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "latency_ms": step.latency_ms,
    }


@login_required
@require_GET
def run_export(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run in the JSONL format of shared/eval/README.md (one line)."""
    run = access.run_for(request, run_id, "task", "policy")
    line = {
        "source": run.source,
        "run_id": str(run.pk),
        "task": run.prompt,
        "success": run.success,
        "reward": None if run.success is None else float(run.success),
        **({"context": run.context} if run.context else {}),
        "steps": [_export_step(s) for s in Step.objects.filter(run=run).order_by("index").iterator()],
        "meta": {
            "model": run.model_name,
            "provider": run.provider,
            "mode": run.mode,
            "status": run.status,
            "gold_answer": run.task.gold_answer if run.task else None,
            "task_slug": run.task.slug if run.task else None,
            "final_answer": run.final_answer,
            "seed": run.seed,
        },
    }
    response = StreamingHttpResponse(
        iter([shown_json.dumps(line) + "\n"]), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.jsonl"'
    return response
