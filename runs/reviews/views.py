"""The review queue: list and item panes, labels, forks, figures, export."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

from django.contrib.auth.decorators import login_required
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling

from runs.core import access, charts
from runs.core.csv_cells import csv_lines, jsonl_lines
from runs.core.error_text import FORK, QUEUE, REVIEW, translated
from runs.core.paging import keyset_page
from runs.core.queue import QueueUnavailable
from runs.launch.selectors import trajectory
from runs.launch.services import EDITABLE_KINDS, FORK_DEFAULT_TURNS, FORK_MAX_TURNS, ForkError, fork_create
from runs.reviews.forms import ForkForm, QueueFilterForm, StepForkForm
from runs.reviews.models import ForkOutcome, ReviewItem, ReviewLabel
from runs.reviews.selectors import (
    EXPORT_COLUMNS,
    export_rows,
    false_kill_figures,
    filter_items,
    fork_sentence,
    items_for,
    review_agreement,
)
from runs.reviews.services import ReviewError, item_for_step, review_fork_settle, review_fork_start, review_label
from tracing.store.models import Step

ITEMS_PER_PAGE = 50
# Steps shown around the interruption in the item pane; the run page has all.
STEPS_BEFORE = 30
STEPS_AFTER = 15
# A fork runs at most FORK_MAX_TURNS turns, a few steps each: one page holds it.
FORK_STEPS_MAX = 400
DETECTORS = ("repetition", "observation", "stagnation", "drift", "budget", "user")
LABEL_KEYS = (("1", "justified"), ("2", "wrongly_killed"), ("3", "unsure"))
# The id of the queue's "older interruptions" row: htmx names it in HX-Target
# when it asks for the next page, which is answered with rows only.
MORE_ROWS_ID = "more-items"
_PANE_RELATED = ("run", "run__task", "run__policy", "task", "fork", "fork__policy")


def _parse_cursor(raw: str, sort: str) -> tuple[object, int] | None:
    key, _, pk = raw.rpartition("_")
    try:
        return (float(key) if sort == "uncertain" else datetime.fromisoformat(key)), int(pk)
    except ValueError:
        return None


def _cursor(item: ReviewItem, sort: str) -> str:
    key = repr(item.uncertainty) if sort == "uncertain" else item.created_at.isoformat()
    return f"{key}_{item.pk}"


def _get_item(request: HttpRequest, run_id: int, index: int, *related: str) -> ReviewItem:
    item = item_for_step(run_id, index, items_for(request).select_related(*related))
    if item is None:
        raise Http404(_("step %(step)s of run %(run)s is not an interruption") % {"step": index, "run": run_id})
    return item


def _bad_request(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _queue_page(qs: QuerySet[ReviewItem], form: QueueFilterForm) -> tuple[QuerySet[ReviewItem], str]:
    """The form's items in the order it asks for, from its cursor on; and the sort."""
    if not form.is_valid():
        return qs.none(), "newest"
    data = form.cleaned_data
    sort = data["sort"] or "newest"
    qs = filter_items(qs, data)
    if data["before"]:
        cursor = _parse_cursor(data["before"], sort)
        if cursor is None:
            form.add_error("before", "Not a page cursor; start from the first page.")
            return qs.none(), sort
        key, pk = cursor
        column = "uncertainty" if sort == "uncertain" else "created_at"
        qs = qs.filter(Q(**{f"{column}__lt": key}) | Q(**{column: key, "id__lt": pk}))
    return (qs.order_by("-uncertainty", "-id") if sort == "uncertain" else qs.order_by("-created_at", "-id")), sort


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    qs, sort = _queue_page(items_for(request).select_related("task"), form)
    items, next_query = keyset_page(qs, ITEMS_PER_PAGE, request, lambda item: _cursor(item, sort))
    figures_query = request.GET.copy()
    figures_query.pop("before", None)
    context = {"form": form, "items": items, "next_query": next_query, "more_id": MORE_ROWS_ID,
               "now": timezone.now(), "figures_query": figures_query.urlencode()}
    if request.htmx.target == MORE_ROWS_ID:
        return render(request, "reviews/_rows.html", context)
    selected = request.GET.get("item", "")
    context.update({
        "detectors": DETECTORS,
        "policies": list(access.policies_for(request).order_by("name", "version").values_list("name", "version")),
        "tasks": access.tasks_for(request).only("slug").order_by("slug"),
        # Only "run/step" reaches the attribute the pane loads from.
        "selected": selected if re.fullmatch(r"\d+/\d+", selected) else "",
    })
    return render(request, "reviews/queue.html", context)


def _item_context(request: HttpRequest, item: ReviewItem) -> dict:
    """The item pane; `item` comes with _PANE_RELATED selected."""
    run = item.run
    steps = trajectory(run, lo=max(0, item.step_index - STEPS_BEFORE), hi=item.step_index + STEPS_AFTER)
    return {
        "item": item,
        "run": run,
        "before": [s for s in steps if s.index < item.step_index],
        "interruption": next((s for s in steps if s.index == item.step_index), None),
        "after": [s for s in steps if s.index > item.step_index],
        "hidden_before": max(0, item.step_index - STEPS_BEFORE),
        "hidden_after": max(0, (run.fork_from or 0) + run.step_count - 1 - item.step_index - STEPS_AFTER),
        **_label_context(request, item),
        **_fork_context(item),
        **_fork_form_context(request),
    }


def _label_context(request: HttpRequest, item: ReviewItem) -> dict:
    labels = list(item.labels.select_related("reviewer").order_by("-created_at", "-id"))
    mine = next((label for label in labels if label.is_current and label.reviewer_id == request.user.pk), None)
    return {"item": item, "labels": labels, "mine": mine, "can_label": access.is_reviewer(request),
            "label_keys": LABEL_KEYS, "values": ReviewLabel.Value}


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
        "fork_sentence": fork_sentence(item.fork_outcome, item.fork_turns, item.fork_reason),
        "fork_live": fork is not None and (fork.is_live or item.fork_outcome == ForkOutcome.RUNNING),
    }


def _fork_form_context(request: HttpRequest) -> dict:
    return {"policies": list(access.policies_for(request).order_by("name", "-version")),
            "default_turns": FORK_DEFAULT_TURNS, "max_turns": FORK_MAX_TURNS}


@login_required
@require_GET
def item_detail(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    item = _get_item(request, run_id, index, *_PANE_RELATED)
    context = _item_context(request, item)
    if request.htmx:
        return render(request, "reviews/_item.html", context)
    return render(request, "reviews/item.html", context)


@login_required
@require_POST
def item_label(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    access.require_reviewer(request)
    item = _get_item(request, run_id, index)
    try:
        review_label(item_id=item.pk, reviewer=request.user, value=request.POST.get("value", ""),
                     note=request.POST.get("note", ""))
    except ReviewError as exc:
        return _bad_request(translated(str(exc), REVIEW))
    if not request.htmx:
        return redirect(reverse("reviews:item", args=[run_id, index]))
    item = ReviewItem.objects.select_related("task").get(pk=item.pk)
    return render(request, "reviews/_label.html", {**_label_context(request, item), "oob_row": True,
                                                     "now": timezone.now()})


@login_required
@require_POST
def item_fork(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    access.require_reviewer(request)
    item = _get_item(request, run_id, index, "run")
    form = ForkForm(request.POST, policies=access.policies_for(request))
    if not form.is_valid():
        return _bad_request("; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    try:
        review_fork_start(item=item, owner=request.user, policy=form.cleaned_data["policy"],
                          turns=form.cleaned_data["turns"] or FORK_DEFAULT_TURNS)
    except ForkError as exc:
        return _bad_request(_("Cannot fork: %(why)s") % {"why": translated(str(exc), FORK)})
    except QueueUnavailable as exc:
        return HttpResponse(translated(str(exc), QUEUE), status=503, content_type="text/plain; charset=utf-8")
    if not request.htmx:
        return redirect(reverse("reviews:item", args=[run_id, index]))
    item = ReviewItem.objects.select_related("fork", "fork__policy").get(pk=item.pk)
    return render(request, "reviews/_fork.html", {**_fork_context(item), **_fork_form_context(request), "can_label": True})


@login_required
@require_GET
def item_fork_steps(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    """The fork's steps after the cursor; stops polling when the fork has ended."""
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return _bad_request(_("after must be an integer step index"))
    item = _get_item(request, run_id, index, "task", "fork", "fork__policy")
    if item.fork is None:
        return HttpResponseStopPolling()
    if not item.fork.is_live and item.fork_outcome in (ForkOutcome.RUNNING, ForkOutcome.NONE):
        # The worker settles the item when the fork ends; this covers a fork
        # whose end-of-run analysis failed.
        review_fork_settle(item.fork)
        item = ReviewItem.objects.select_related("task", "fork", "fork__policy").get(pk=item.pk)
    context = {**_fork_context(item, after=after), "now": timezone.now()}
    response = render(request, "reviews/_fork_poll.html", context)
    if not context["fork_live"]:
        response.status_code = HttpResponseStopPolling.status_code
    return response


def _filtered_items(request: HttpRequest, **override: str) -> QuerySet[ReviewItem]:
    form = QueueFilterForm(request.GET)
    return filter_items(items_for(request), {**(form.cleaned_data if form.is_valid() else {}),
                                                           **override})


def _figures_chart(rows: list) -> dict | None:
    """False-kill rate and fork success per detector threshold."""
    if not rows:
        return None
    keys = [row.key for row in rows]
    return charts.figure(
        [charts.bar(keys, [row.false_kill_rate for row in rows], name="false-kill rate", marker={"color": charts.RED},
                    customdata=[row.labelled for row in rows],
                    hovertemplate="%{x}<br>false-kill rate %{y:.2f}<br>%{customdata} labelled<extra></extra>"),
         charts.bar(keys, [row.fork_success_rate for row in rows], name="forks of stopped runs that succeeded",
                    marker={"color": charts.GREEN}, hovertemplate="%{x}<br>fork success %{y:.2f}<extra></extra>")],
        height=240, barmode="group", margin={"l": 40, "r": 10, "t": 10, "b": 80},
        yaxis={"range": [0, 1], "tickformat": ".0%"}, legend={"orientation": "h", "y": 1.12},
    )


@login_required
@require_GET
def figures(request: HttpRequest) -> HttpResponse:
    # The label-state filter narrows the queue, not the figures: they are about labels.
    qs = _filtered_items(request, label="")
    groups = false_kill_figures(qs)
    context = {"groups": groups, "agreement": review_agreement(qs), "chart": _figures_chart(groups["threshold"])}
    if request.htmx:
        return render(request, "reviews/_figures.html", context)
    return render(request, "reviews/figures.html", context)


def _export_rows(request: HttpRequest) -> Iterator[dict]:
    return export_rows(_filtered_items(request), history=request.GET.get("history") == "1")


@login_required
@require_GET
def export_csv(request: HttpRequest) -> StreamingHttpResponse:
    lines = csv_lines(_export_rows(request), EXPORT_COLUMNS, json_columns=["evidence"])
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-labels.csv"'
    return response


@login_required
@require_GET
def export_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    lines = jsonl_lines(_export_rows(request))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="review-labels.jsonl"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def run_fork_edited(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    """What if… : fork any run from one of its observations or thoughts, edited by hand."""
    run = access.run_for(request, run_id, "task", "policy")
    step = next((s for s in trajectory(run, lo=index, hi=index) if s.kind in EDITABLE_KINDS), None)
    if step is None:
        raise Http404(_("run %(run)s has no observation or thought at step %(step)s") % {"run": run_id, "step": index})
    status = 200
    if request.method == "POST":
        access.require_reviewer(request)
        form = StepForkForm(request.POST, policies=access.policies_for(request))
        if form.is_valid():
            try:
                fork = fork_create(parent=run, fork_from=index, owner=request.user,
                                            policy=form.cleaned_data["policy"], turns=form.cleaned_data["turns"],
                                            edit={"text": form.cleaned_data["text"]})
            except ForkError as exc:
                form.add_error(None, translated(str(exc), FORK))
            except QueueUnavailable as exc:
                form.add_error(None, _("%(why)s. Nothing was queued.") % {"why": translated(str(exc), QUEUE)})
            else:
                return redirect(fork)
        status = 400
    else:
        form = StepForkForm(initial={"text": step.text, "policy": run.policy, "turns": FORK_DEFAULT_TURNS},
                            policies=access.policies_for(request))
    return render(request, "reviews/step_fork.html",
                  {"run": run, "step": step, "form": form, "can_label": access.is_reviewer(request)}, status=status)
