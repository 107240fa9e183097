"""The review queue: list and item panes, labels, forks, figures, export, "what if…"."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from datetime import datetime

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs import services
from runs.models import Policy, Run, Task
from runs.reviews import services as reviews
from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from tracing.models import Step

PERMISSION = "runs.label_interruption"
ITEMS_PER_PAGE = 50
# Steps shown around the interruption in the item pane; the run page has all.
STEPS_BEFORE = 30
STEPS_AFTER = 15
# A fork runs at most FORK_MAX_TURNS turns, a few steps each: one page holds it.
FORK_STEPS_MAX = 400
DETECTORS = ("repetition", "observation", "stagnation", "drift", "budget", "user")
TIERS = ("hint", "redirect", "stop")
LABEL_KEYS = (("1", "justified"), ("2", "wrongly_killed"), ("3", "unsure"))


class QueueFilterForm(forms.Form):
    detector = forms.CharField(required=False, max_length=40)
    tier = forms.ChoiceField(choices=[("", "any tier"), *((t, t) for t in TIERS)], required=False)
    # "name" for every version, "name:version" for one.
    policy = forms.CharField(required=False, max_length=90)
    task = forms.CharField(required=False, max_length=80)
    model = forms.CharField(required=False, max_length=120)
    label = forms.ChoiceField(choices=[("", "any label state"), ("labelled", "labelled"), *LabelState.choices],
                              required=False)
    sort = forms.ChoiceField(choices=[("newest", "newest first"), ("uncertain", "most uncertain first")],
                             required=False)
    before = forms.CharField(required=False, max_length=80)


def filter_items(qs: QuerySet[ReviewItem], data: dict) -> QuerySet[ReviewItem]:
    """The queue's filters (all but the cursor and the sort), shared with the figures."""
    if data.get("detector"):
        qs = qs.filter(detector=data["detector"])
    if data.get("tier"):
        qs = qs.filter(tier=data["tier"])
    if data.get("policy"):
        name, _, version = data["policy"].partition(":")
        qs = qs.filter(policy_name=name)
        if version.isdigit():
            qs = qs.filter(policy_version=int(version))
    if data.get("task"):
        qs = qs.filter(task__slug=data["task"])
    if data.get("model"):
        qs = qs.filter(model_name=data["model"])
    if data.get("label") == "labelled":
        qs = qs.filter(label_count__gt=0)
    elif data.get("label"):
        qs = qs.filter(label=data["label"])
    return qs


def _parse_cursor(raw: str, sort: str) -> tuple[object, int] | None:
    key, _, pk = raw.rpartition("_")
    try:
        return (float(key) if sort == "uncertain" else datetime.fromisoformat(key)), int(pk)
    except ValueError:
        return None


def _cursor(item: ReviewItem, sort: str) -> str:
    key = repr(item.uncertainty) if sort == "uncertain" else item.created_at.isoformat()
    return f"{key}_{item.pk}"


def _is_reviewer(request: HttpRequest) -> bool:
    return request.user.has_perm(PERMISSION)


def _require_reviewer(request: HttpRequest) -> None:
    # Checked in the view, so the htmx endpoints are as protected as the page.
    if not _is_reviewer(request):
        raise PermissionDenied("You can read reviews but not label or fork: ask for the reviewer permission.")


_PANE_RELATED = ("run", "run__task", "run__policy", "task", "fork", "fork__policy")


def _get_item(run_id: int, index: int, *related: str) -> ReviewItem:
    item = reviews.item_for_step(run_id, index, ReviewItem.objects.select_related(*related))
    if item is None:
        raise Http404(f"step {index} of run {run_id} is not an interruption")
    return item


def _bad_request(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    sort = "newest"
    qs = ReviewItem.objects.select_related("task")
    if form.is_valid():
        data = form.cleaned_data
        sort = data["sort"] or "newest"
        qs = filter_items(qs, data)
        if data["before"]:
            cursor = _parse_cursor(data["before"], sort)
            if cursor is None:
                form.add_error("before", "Not a page cursor; start from the first page.")
                qs = qs.none()
            else:
                key, pk = cursor
                column = "uncertainty" if sort == "uncertain" else "created_at"
                qs = qs.filter(Q(**{f"{column}__lt": key}) | Q(**{column: key, "id__lt": pk}))
    else:
        qs = qs.none()
    qs = qs.order_by("-uncertainty", "-id") if sort == "uncertain" else qs.order_by("-created_at", "-id")
    page = list(qs[: ITEMS_PER_PAGE + 1])
    items, has_more = page[:ITEMS_PER_PAGE], len(page) > ITEMS_PER_PAGE
    next_query = ""
    if has_more:
        params = request.GET.copy()
        params["before"] = _cursor(items[-1], sort)
        next_query = params.urlencode()
    figures_query = request.GET.copy()
    figures_query.pop("before", None)
    context = {"form": form, "items": items, "next_query": next_query, "now": timezone.now(),
               "figures_query": figures_query.urlencode()}
    if request.htmx and request.htmx.target == "review-rows":
        return render(request, "runs/review_rows.html", context)
    selected = request.GET.get("item", "")
    context.update({
        "detectors": DETECTORS,
        "policies": list(Policy.objects.order_by("name", "version").values_list("name", "version")),
        "tasks": Task.objects.only("slug").order_by("slug"),
        # Only "run/step" reaches the attribute the pane loads from.
        "selected": selected if re.fullmatch(r"\d+/\d+", selected) else "",
    })
    return render(request, "runs/review_queue.html", context)


def _window(run: Run, lo: int, hi: int) -> list[Step]:
    """Steps lo..hi of the run's trajectory; a fork's first steps are its parent's."""
    if run.parent_id is None or lo >= run.fork_from:
        return list(Step.objects.filter(run_id=run.pk, index__gte=lo, index__lte=hi).order_by("index"))
    inherited = list(Step.objects.filter(run_id=run.parent_id, index__gte=lo, index__lt=min(hi + 1, run.fork_from))
                     .order_by("index"))
    return inherited + list(Step.objects.filter(run_id=run.pk, index__gte=run.fork_from, index__lte=hi)
                            .order_by("index"))


def _item_context(request: HttpRequest, item: ReviewItem) -> dict:
    """The item pane; `item` comes with _PANE_RELATED selected."""
    run = item.run
    steps = _window(run, max(0, item.step_index - STEPS_BEFORE), item.step_index + STEPS_AFTER)
    before = [s for s in steps if s.index < item.step_index]
    at = next((s for s in steps if s.index == item.step_index), None)
    after = [s for s in steps if s.index > item.step_index]
    return {
        "item": item,
        "run": run,
        "before": before,
        "interruption": at,
        "after": after,
        "hidden_before": max(0, item.step_index - STEPS_BEFORE),
        "hidden_after": max(0, (run.fork_from or 0) + run.step_count - 1 - item.step_index - STEPS_AFTER),
        **_label_context(request, item),
        **_fork_context(item),
        **_fork_form_context(),
    }


def _label_context(request: HttpRequest, item: ReviewItem) -> dict:
    labels = list(item.labels.select_related("reviewer").order_by("-created_at", "-id"))
    mine = next((label for label in labels if label.is_current and label.reviewer_id == request.user.pk), None)
    return {"item": item, "labels": labels, "mine": mine, "can_label": _is_reviewer(request), "label_keys": LABEL_KEYS,
            "values": ReviewLabel.Value}


def _fork_context(item: ReviewItem, after: int | None = None) -> dict:
    fork = item.fork
    steps: list[Step] = []
    if fork is not None:
        qs = Step.objects.filter(run_id=fork.pk).order_by("index")
        if after is not None:
            qs = qs.filter(index__gt=after)
        steps = list(qs[:FORK_STEPS_MAX])
    cursor = steps[-1].index if steps else (after if after is not None else -1)
    return {
        "item": item,
        "fork": fork,
        "fork_steps": steps,
        "fork_cursor": cursor,
        "fork_sentence": reviews.fork_sentence(item.fork_outcome, item.fork_turns, item.fork_reason),
        "fork_live": fork is not None and (fork.is_live or item.fork_outcome == ForkOutcome.RUNNING),
    }


@login_required
@require_GET
def item_detail(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    item = _get_item(run_id, index, *_PANE_RELATED)
    context = _item_context(request, item)
    if request.htmx:
        return render(request, "runs/review_item.html", context)
    return render(request, "runs/review_item_page.html", context)


@login_required
@require_POST
def item_label(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    _require_reviewer(request)
    item = _get_item(run_id, index)
    try:
        reviews.review_label(item_id=item.pk, reviewer=request.user, value=request.POST.get("value", ""),
                             note=request.POST.get("note", ""))
    except reviews.ReviewError as exc:
        return _bad_request(str(exc))
    if not request.htmx:
        return redirect(reverse("reviews:item", args=[run_id, index]))
    item = ReviewItem.objects.select_related("task").get(pk=item.pk)
    return render(request, "runs/review_label.html", {**_label_context(request, item), "oob_row": True,
                                                       "now": timezone.now()})


class ForkForm(forms.Form):
    policy = forms.ModelChoiceField(queryset=Policy.objects.all(), required=False,
                                    empty_label="watchdog off")
    turns = forms.IntegerField(min_value=1, max_value=services.FORK_MAX_TURNS, initial=services.FORK_DEFAULT_TURNS,
                               required=False)


@login_required
@require_POST
def item_fork(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    _require_reviewer(request)
    item = _get_item(run_id, index, "run")
    form = ForkForm(request.POST)
    if not form.is_valid():
        return _bad_request("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    try:
        reviews.review_fork_start(item=item, owner=request.user, policy=form.cleaned_data["policy"],
                                  turns=form.cleaned_data["turns"] or services.FORK_DEFAULT_TURNS)
    except services.ForkError as exc:
        return _bad_request(f"Cannot fork: {exc}")
    except services.QueueUnavailable as exc:
        return HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
    if not request.htmx:
        return redirect(reverse("reviews:item", args=[run_id, index]))
    item = ReviewItem.objects.select_related("fork", "fork__policy").get(pk=item.pk)
    return render(request, "runs/review_fork.html", {**_fork_context(item), **_fork_form_context(), "can_label": True})


def _fork_form_context() -> dict:
    return {"policies": list(Policy.objects.order_by("name", "-version")),
            "default_turns": services.FORK_DEFAULT_TURNS, "max_turns": services.FORK_MAX_TURNS}


@login_required
@require_GET
def item_fork_steps(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    """The fork's steps after the cursor; stops polling when the fork has ended."""
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return _bad_request("after must be an integer step index")
    item = _get_item(run_id, index, "task", "fork", "fork__policy")
    if item.fork is None:
        return HttpResponseStopPolling()
    if not item.fork.is_live and item.fork_outcome in (ForkOutcome.RUNNING, ForkOutcome.NONE):
        # The worker settles the item when the fork ends; this covers a fork
        # whose end-of-run analysis failed.
        reviews.review_fork_settle(item.fork)
        item = ReviewItem.objects.select_related("task", "fork", "fork__policy").get(pk=item.pk)
    context = {**_fork_context(item, after=after), "now": timezone.now()}
    response = render(request, "runs/review_fork_poll.html", context)
    if not context["fork_live"]:
        response.status_code = HttpResponseStopPolling.status_code
    return response


@login_required
@require_GET
def figures(request: HttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    # The label-state filter narrows the queue, not the figures: they are about labels.
    data = {**(form.cleaned_data if form.is_valid() else {}), "label": ""}
    qs = filter_items(ReviewItem.objects.all(), data)
    groups = reviews.false_kill_figures(qs)
    agreement = reviews.review_agreement(qs)
    chart = {
        "keys": [row.key for row in groups["threshold"]],
        "rate": [row.false_kill_rate for row in groups["threshold"]],
        "fork_rate": [row.fork_success_rate for row in groups["threshold"]],
        "labelled": [row.labelled for row in groups["threshold"]],
    }
    context = {"groups": groups, "agreement": agreement, "chart": chart}
    if request.htmx:
        return render(request, "runs/review_figures.html", context)
    return render(request, "runs/review_figures_page.html", context)


# -- export ------------------------------------------------------------------

EXPORT_COLUMNS = ("run", "step", "detector", "tier", "policy", "policy_version", "threshold", "task", "model",
                  "reviewer", "label", "note", "labelled_at", "current", "evidence", "fork_run", "fork_outcome",
                  "fork_turns", "fork_reason")


def _export_rows(request: HttpRequest) -> Iterator[dict]:
    form = QueueFilterForm(request.GET)
    items = filter_items(ReviewItem.objects.all(), form.cleaned_data if form.is_valid() else {})
    labels = ReviewLabel.objects.filter(item__in=items.values("pk"))
    if request.GET.get("history") != "1":
        labels = labels.filter(is_current=True)
    evidence = Subquery(Step.objects.filter(run_id=OuterRef("item__run_id"), index=OuterRef("item__step_index"))
                        .values("meta__evidence")[:1])
    rows = (labels.annotate(evidence=evidence, task_slug=F("item__task__slug"))
            .select_related("item", "reviewer").order_by("item__run_id", "item__step_index", "created_at", "id"))
    for label in rows.iterator(chunk_size=2000):
        item = label.item
        yield {
            "run": item.run_id, "step": item.step_index, "detector": item.detector, "tier": item.tier,
            "policy": item.policy_name, "policy_version": item.policy_version, "threshold": item.threshold,
            "task": label.task_slug, "model": item.model_name, "reviewer": label.reviewer.username,
            "label": label.value, "note": label.note, "labelled_at": label.created_at.isoformat(),
            "current": label.is_current, "evidence": label.evidence if label.evidence is not None else {},
            "fork_run": item.fork_id, "fork_outcome": item.fork_outcome or None, "fork_turns": item.fork_turns,
            "fork_reason": item.fork_reason or None,
        }


@login_required
@require_GET
def export_csv(request: HttpRequest) -> StreamingHttpResponse:
    def lines() -> Iterator[str]:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        for row in _export_rows(request):
            writer.writerow({**row, "evidence": json.dumps(row["evidence"], ensure_ascii=False, sort_keys=True)})
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
        yield buf.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-labels.csv"'
    return response


@login_required
@require_GET
def export_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in _export_rows(request))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-labels.jsonl"'
    return response


# -- what if… ------------------------------------------------------------------


class WhatIfForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 10, "class": "mono"}), max_length=50_000,
                           strip=False)
    policy = forms.ModelChoiceField(queryset=Policy.objects.all(), required=False, empty_label="watchdog off")
    turns = forms.IntegerField(min_value=1, max_value=services.FORK_MAX_TURNS, initial=services.FORK_DEFAULT_TURNS)


@login_required
@require_http_methods(["GET", "POST"])
def what_if(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    """Fork any run from one of its observations or thoughts, edited by hand."""
    run = get_object_or_404(Run.objects.select_related("task", "policy"), pk=run_id)
    step = (Step.objects.filter(run_id=run.pk, index=index, kind__in=[Step.Kind.OBSERVATION, Step.Kind.THOUGHT])
            .first())
    if step is None and run.parent_id is not None and index < run.fork_from:
        step = (Step.objects.filter(run_id=run.parent_id, index=index,
                                    kind__in=[Step.Kind.OBSERVATION, Step.Kind.THOUGHT]).first())
    if step is None:
        raise Http404(f"run {run_id} has no observation or thought at step {index}")
    status = 200
    if request.method == "POST":
        _require_reviewer(request)
        form = WhatIfForm(request.POST)
        if form.is_valid():
            try:
                fork = services.fork_create(parent=run, fork_from=index, owner=request.user,
                                            policy=form.cleaned_data["policy"], turns=form.cleaned_data["turns"],
                                            edit={"text": form.cleaned_data["text"]})
            except services.ForkError as exc:
                form.add_error(None, str(exc))
            except services.QueueUnavailable as exc:
                form.add_error(None, f"{exc}. Nothing was queued.")
            else:
                return redirect(fork)
        status = 400
    else:
        form = WhatIfForm(initial={"text": step.text, "policy": run.policy, "turns": services.FORK_DEFAULT_TURNS})
    return render(request, "runs/review_whatif.html",
                  {"run": run, "step": step, "form": form, "can_label": _is_reviewer(request)}, status=status)
