from __future__ import annotations

import json
from datetime import datetime

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F, Q
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs import services
from runs.forms import NewRunForm
from runs.models import Run, Task
from tracing.models import Step

RUNS_PER_PAGE = 50
# Steps per request on the run page: enough to fill a screen several times,
# small enough that a 5,000-step run never arrives as one huge page.
STEPS_PER_PAGE = 200
# The first page grows to reach the anchor break, up to this many steps.
MAX_INITIAL_STEPS = 2000


class RunFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "any status"), *Run.Status.choices], required=False)
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    mode = forms.ChoiceField(choices=[("", "any mode"), *Run.Mode.choices], required=False)
    intervened = forms.ChoiceField(choices=[("", "any"), ("yes", "had an intervention"), ("no", "no intervention")],
                                   required=False)
    detector = forms.CharField(required=False, max_length=40)
    tier = forms.ChoiceField(choices=[("", "any tier"), ("hint", "hint"), ("redirect", "redirect"), ("stop", "stop")],
                             required=False)
    policy = forms.CharField(required=False, max_length=80)
    steps_min = forms.IntegerField(required=False, min_value=0)
    steps_max = forms.IntegerField(required=False, min_value=0)
    outcome = forms.ChoiceField(choices=[("", "any outcome"), ("correct", "correct"), ("wrong", "wrong")], required=False)
    stopped_by = forms.ChoiceField(choices=[("", "any end"), ("max_steps", "max steps"), ("token_budget", "token budget"),
                                            ("watchdog", "watchdog"), ("user", "user")], required=False)
    anchor = forms.ChoiceField(choices=[("", "any anchoring"), ("broken", "lost its anchor"), ("kept", "no anchor break")],
                               required=False)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    before = forms.CharField(required=False, max_length=80)
    sort = forms.ChoiceField(choices=[(k, k) for k in ("-created", "created", "-steps", "steps", "-tokens", "tokens")],
                             required=False)


# Sortable columns of the run list: URL name -> model field. Every sort is a
# keyset on (field, id), each backed by an index (see Run.Meta).
SORT_FIELDS = {"created": "created_at", "steps": "step_count", "tokens": "tokens_total"}


def _get_run(request: HttpRequest, run_id: int) -> Run:
    return get_object_or_404(Run.objects.for_user(request.user).select_related("task", "policy"), pk=run_id)


def _parse_cursor(raw: str, field: str) -> tuple[datetime | int, int] | None:
    value, _, pk = raw.rpartition("_")
    try:
        return (datetime.fromisoformat(value) if field == "created_at" else int(value)), int(pk)
    except ValueError:
        return None


def _cursor(run: Run, field: str) -> str:
    value = getattr(run, field)
    return f"{value.isoformat() if field == 'created_at' else value}_{run.pk}"


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    form = RunFilterForm(request.GET)
    sort = form.data.get("sort") or "-created"
    descending = sort.startswith("-")
    field = SORT_FIELDS.get(sort.lstrip("-"), "created_at")
    qs = Run.objects.for_user(request.user).select_related("task", "policy").annotate(
        tokens_total=F("prompt_tokens") + F("completion_tokens")
    )
    qs = qs.order_by(f"-{field}", "-id") if descending else qs.order_by(field, "id")
    if form.is_valid():
        data = form.cleaned_data
        if data["status"]:
            qs = qs.filter(status=data["status"])
        if data["task"]:
            qs = qs.filter(task__slug=data["task"])
        if data["model"]:
            qs = qs.filter(model_name=data["model"])
        if data["mode"]:
            qs = qs.filter(mode=data["mode"])
        if data["intervened"] == "yes":
            qs = qs.filter(intervention_count__gt=0)
        elif data["intervened"] == "no":
            qs = qs.filter(intervention_count=0)
        if data["detector"]:
            qs = qs.filter(intervention_detectors__contains=[data["detector"]])
        if data["tier"]:
            qs = qs.filter(intervention_tiers__contains=[data["tier"]])
        if data["policy"]:
            qs = qs.filter(policy__name=data["policy"])
        if data["steps_min"] is not None:
            qs = qs.filter(step_count__gte=data["steps_min"])
        if data["steps_max"] is not None:
            qs = qs.filter(step_count__lte=data["steps_max"])
        if data["outcome"]:
            qs = qs.filter(success=data["outcome"] == "correct")
        if data["stopped_by"]:
            qs = qs.filter(stopped_by=data["stopped_by"])
        if data["anchor"] == "broken":
            qs = qs.filter(first_anchor_break__isnull=False)
        elif data["anchor"] == "kept":
            qs = qs.filter(first_anchor_break__isnull=True)
        if data["since"]:
            qs = qs.filter(created_at__date__gte=data["since"])
        if data["until"]:
            qs = qs.filter(created_at__date__lte=data["until"])
        if data["before"]:
            cursor = _parse_cursor(data["before"], field)
            if cursor is None:
                form.add_error("before", "Not a page cursor; start from the first page.")
            else:
                value, pk = cursor
                op = "lt" if descending else "gt"
                qs = qs.filter(Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"id__{op}": pk}))
    else:
        qs = qs.none()
    page = list(qs[: RUNS_PER_PAGE + 1])
    runs, has_more = page[:RUNS_PER_PAGE], len(page) > RUNS_PER_PAGE
    params = request.GET.copy()
    next_query = ""
    if has_more:
        params["before"] = _cursor(runs[-1], field)
        next_query = params.urlencode()
    context = {
        "form": form,
        "runs": runs,
        "next_query": next_query,
        "sort_links": _sort_links(request, sort),
        "tasks": Task.objects.only("slug"),
        "now": timezone.now(),
    }
    if request.htmx and request.htmx.target == "run-rows":
        return render(request, "runs/_run_rows.html", context)
    return render(request, "runs/list.html", context)


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


def _steps_after(run: Run, after: int, limit: int = STEPS_PER_PAGE) -> list[Step]:
    return list(Step.objects.filter(run=run, index__gt=after).order_by("index")[:limit])


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(request, run_id)
    # The page opens at the anchor break, so it must be among the loaded steps.
    upto = min((run.first_anchor_break or 0) + STEPS_PER_PAGE // 4, MAX_INITIAL_STEPS)
    inherited = []
    if run.parent_id is not None:
        # A fork's first steps are its parent's, read from the parent.
        inherited = list(Step.objects.filter(run_id=run.parent_id, index__lt=run.fork_from)
                         .order_by("index")[:MAX_INITIAL_STEPS])
        steps = _steps_after(run, run.fork_from - 1, limit=max(STEPS_PER_PAGE, upto))
    else:
        steps = _steps_after(run, -1, limit=max(STEPS_PER_PAGE, upto))
    return render(request, "runs/detail.html",
                  {**_timeline_context(run, steps), "inherited": inherited, "pressure": _pressure(run)})


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
    return {"points": points, "peak": peak, "last": last, "marks": marks, "turns": len(run.context_tokens)}


def _timeline_context(run: Run, steps: list[Step]) -> dict:
    last = steps[-1].index if steps else None
    full_page = len(steps) >= STEPS_PER_PAGE
    return {
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
    run = _get_run(request, run_id)
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return HttpResponse("after must be an integer step index", status=400)
    steps = _steps_after(run, after)
    if not steps and not run.is_live:
        # Done and nothing new: htmx stops polling on 286, but the header still
        # needs its final state, so send it out-of-band.
        response = render(request, "runs/_steps_poll.html", {**_timeline_context(run, steps), "cursor": after})
        response.status_code = HttpResponseStopPolling.status_code
        return response
    context = _timeline_context(run, steps)
    if not steps:
        context["cursor"] = after
    return render(request, "runs/_steps_poll.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    initial = {}
    if request.method == "GET" and request.GET.get("task"):
        task = Task.objects.filter(slug=request.GET["task"]).first()
        if task is None:
            raise Http404("unknown task")
        initial["task"] = task
    form = NewRunForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        task: Task | None = data["task"]
        provider = data["provider"]
        model_name = {"sim": "sim", "local": ""}.get(provider, data["model_name"].strip())
        spec = services.RunSpec(
            task=task,
            prompt=task.prompt if task else data["prompt"].strip(),
            provider=provider,
            model_name=model_name or "gemma-3-270m",
            mode=data["mode"],
            temperature=data["temperature"],
            max_steps=data["max_steps"],
            max_tokens=data["max_tokens"],
            seed=data["seed"],
            settings={**({"sim": form.sim_settings()} if provider == "sim" else {}), "faults": form.faults()},
            policy=data["policy"],
        )
        try:
            runs = services.runs_launch(owner=request.user, spec=spec, reruns=data["reruns"])
        except services.QueueUnavailable as exc:
            form.add_error(None, f"{exc}. Nothing was queued; try again when the queue is back.")
        else:
            if len(runs) > 1:
                messages.success(request, f"Queued {len(runs)} reruns.")
                return redirect(f"{_list_url()}?task={task.slug}" if task else _list_url())
            return redirect(runs[0])
    status = 400 if request.method == "POST" else 200
    return render(request, "runs/new.html", {"form": form}, status=status)


def _list_url() -> str:
    from django.urls import reverse

    return reverse("runs:list")


@login_required
@require_POST
def run_stop(request: HttpRequest, run_id: int) -> HttpResponse:
    run = services.run_stop(run=_get_run(request, run_id))
    if request.htmx:
        return render(request, "runs/_run_header.html", {"run": run})
    return redirect(run)


@login_required
@require_GET
def run_export(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run in the JSONL format of shared/eval/README.md (one line)."""
    run = _get_run(request, run_id)

    def step_dict(step: Step) -> dict:
        return {
            "index": step.index,
            "kind": step.kind,
            "content": step.text,
            "tool": step.tool or None,
            "args": step.args,
            "meta": step.meta,
            "prompt_tokens": step.prompt_tokens,
            "completion_tokens": step.completion_tokens,
            "latency_ms": step.latency_ms,
        }

    line = {
        "source": run.source,
        "run_id": str(run.pk),
        "task": run.prompt,
        "success": run.success,
        "reward": None if run.success is None else float(run.success),
        "steps": [step_dict(s) for s in Step.objects.filter(run=run).order_by("index").iterator()],
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
        iter([json.dumps(line, ensure_ascii=False) + "\n"]), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}.jsonl"'
    return response


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL, one trajectory per line (the format of shared/eval/README.md)")
    source = forms.CharField(max_length=40, required=False, help_text="label for these runs (default: each line's source)")


# Uploads above this are refused before reading: use `manage.py importjsonl`.
MAX_UPLOAD_BYTES = 50 * 1024 * 1024


@login_required
@require_http_methods(["GET", "POST"])
def run_import(request: HttpRequest) -> HttpResponse:
    from runs.imports.services import import_lines

    form = ImportForm(request.POST or None, request.FILES or None)
    result = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            if upload.size > MAX_UPLOAD_BYTES:
                form.add_error("file", f"The file is over {MAX_UPLOAD_BYTES // (1024 * 1024)} MB; "
                                       "import it with `manage.py importjsonl` instead.")
                status = 400
            else:
                result = import_lines(upload, owner=request.user, source=form.cleaned_data["source"])
                status = 200 if result.run_ids or not result.errors else 400
        else:
            status = 400
    runs = Run.objects.filter(pk__in=result.run_ids).order_by("pk")[:200] if result else []
    return render(request, "runs/import.html", {"form": form, "result": result, "runs": runs}, status=status)
