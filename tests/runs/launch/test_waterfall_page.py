"""The run page's waterfall and span tree panels (issue 15 item 2)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.core.models import Run
from tests.htmx import hx
from tests.projects import project_of
from tracing.core.formats.otlp import Span
from tracing.store.ingest.services import otlp_ingest
from tracing.store.models import Step

pytestmark = pytest.mark.django_db
TRACE = "ab" * 16


def _span(n, parent, start_ms, end_ms, name, attrs, status="ok"):
    return Span(trace_id=TRACE, span_id=f"{n:016x}", parent_id=f"{parent:016x}" if parent else "", name=name,
                start_ns=1_700_000_000_000_000_000 + start_ms * 1_000_000,
                end_ns=1_700_000_000_000_000_000 + end_ms * 1_000_000, attrs=attrs, status=status)


def _trace():
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."
    return [
        _span(1, 0, 0, 1000, "agent <b>run</b>", {"openinference.span.kind": "AGENT", "input.value": "Q?",
                                                  "output.value": "21 C"}),
        _span(2, 1, 10, 400, "ChatCompletion", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x",
                                                "llm.output_messages.0.message.role": "assistant",
                                                call + "id": "c1", call + "function.name": "weather",
                                                call + "function.arguments": '{"city": "Paris"}'}),
        _span(3, 1, 420, 700, "<img src=x onerror=alert(1)>", {"openinference.span.kind": "TOOL",
                                                               "tool.name": "weather", "tool_call.id": "c1",
                                                               "output.value": "21 C"}, status="error"),
        _span(4, 3, 430, 500, "http GET", {}),
        _span(5, 99, 0, 5, "orphan span", {}),
    ]


@pytest.fixture
def otlp_run(user):
    otlp_ingest(owner=user, project_id=project_of(user).pk, spans=_trace(), analyse=False)
    return Run.objects.get(source="otlp")


def test_the_run_page_offers_the_panels_without_loading_them(auth_client, make_run, otlp_run,
                                                             django_assert_num_queries):
    native = make_run(steps=3)
    body = auth_client.get(reverse("runs:detail", args=[native.pk])).content.decode()
    assert reverse("runs:waterfall", args=[native.pk]) in body and 'hx-trigger="toggle from:closest details once"' in body
    assert reverse("runs:spans", args=[native.pk]) not in body  # not an OTLP run
    assert reverse("runs:spans", args=[otlp_run.pk]) in auth_client.get(otlp_run.get_absolute_url()).content.decode()


def test_a_native_run_has_a_bar_per_model_and_tool_call_ending_when_its_step_was_written(auth_client, make_run):
    run = make_run(steps=6)  # thought, action, observation x2
    # As the loop records a turn: its cost on its first step only.
    Step.objects.filter(run=run, kind="action").update(latency_ms=0, prompt_tokens=0, completion_tokens=0)
    now = timezone.now()
    for s in Step.objects.filter(run=run):
        Step.objects.filter(pk=s.pk).update(created_at=now + timedelta(milliseconds=100 * s.index))
    response = auth_client.get(reverse("runs:waterfall", args=[run.pk]), headers=hx())
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    chart = response.context["chart"]
    assert chart.timed and [b.call.index for b in chart.bars] == [0, 2, 3, 5]
    assert [b.call.kind for b in chart.bars] == ["model", "tool", "model", "tool"]
    assert chart.total_ms == pytest.approx(505, abs=1)
    assert f'href="{run.get_absolute_url()}?step=2#step-2" data-step="2"' in body


def test_an_imported_run_says_it_has_durations_only(auth_client, make_run):
    run = make_run(steps=3, source="tau2")
    body = auth_client.get(reverse("runs:waterfall", args=[run.pk]), headers=hx()).content.decode()
    assert "No start times" in body and "durations, not a timeline" in body


def test_a_run_without_timing_says_there_is_nothing_to_draw(auth_client, make_run):
    run = make_run(steps=3)
    Step.objects.filter(run=run).update(latency_ms=0)
    Step.objects.filter(run=run, kind="action").update(prompt_tokens=0, completion_tokens=0)
    body = auth_client.get(reverse("runs:waterfall", args=[run.pk]), headers=hx()).content.decode()
    # The thought's turn used tokens (a model call) but no time was recorded; so did the search.
    assert "Nothing to draw" in body and "2 calls without timing" in body


def test_an_otlp_run_is_drawn_from_its_spans(auth_client, otlp_run):
    response = auth_client.get(reverse("runs:waterfall", args=[otlp_run.pk]), headers=hx())
    chart = response.context["chart"]
    assert response.context["source"] == "spans" and chart.timed
    assert [(b.call.kind, round(b.call.duration_ms)) for b in chart.bars] == [("model", 390), ("tool", 280)]
    assert chart.bars[1].call.error
    assert "&lt;img src=x" in response.content.decode() and "<img" not in response.content.decode()


def test_the_span_tree_nests_spans_links_steps_and_escapes_names(auth_client, otlp_run):
    response = auth_client.get(reverse("runs:spans", args=[otlp_run.pk]), headers=hx())
    body = response.content.decode()
    assert response.status_code == 200
    assert body.index("agent &lt;b&gt;run&lt;/b&gt;") < body.index("ChatCompletion") < body.index("http GET")
    assert "<img" not in body and "<b>run" not in body
    assert body.count("<details open>") == 2  # the agent and the tool span have children
    steps = dict(Step.objects.filter(run=otlp_run).values_list("meta__span_id", "index"))
    tool_step = min(i for sid, i in Step.objects.filter(run=otlp_run).values_list("meta__span_id", "index")
                    if sid == f"{3:016x}")
    assert f'?step={tool_step}#step-{tool_step}" data-step="{tool_step}">step {tool_step}</a>' in body
    assert steps and "orphan" in body and "span-status-error" in body


def test_the_panels_take_a_constant_number_of_queries(auth_client, otlp_run, django_assert_num_queries):
    # 1 session, 2 user, 3 membership (the current project), 4 run, 5 spans (only the keys drawn), 6 the step
    # of each span
    with django_assert_num_queries(6):
        auth_client.get(reverse("runs:spans", args=[otlp_run.pk]), headers=hx())
    with django_assert_num_queries(6):
        auth_client.get(reverse("runs:waterfall", args=[otlp_run.pk]), headers=hx())


def test_without_htmx_they_are_pages_of_their_own(auth_client, otlp_run):
    for name in ("runs:waterfall", "runs:spans"):
        body = auth_client.get(reverse(name, args=[otlp_run.pk])).content.decode()
        assert "<html" in body and otlp_run.get_absolute_url() in body


def test_anonymous_is_sent_to_login_and_unknown_runs_are_404(auth_client, otlp_run):
    for name in ("runs:waterfall", "runs:spans"):
        assert Client().get(reverse(name, args=[otlp_run.pk])).status_code == 302
        assert auth_client.get(reverse(name, args=[999999])).status_code == 404


def test_another_project_gets_a_404(client, other_user, otlp_run):
    client.force_login(other_user)  # bob: not in the run's project
    assert client.get(reverse("runs:spans", args=[otlp_run.pk]), headers=hx()).status_code == 404


def test_the_run_page_opens_with_a_named_step_loaded(auth_client, make_run):
    run = make_run(steps=450)
    response = auth_client.get(reverse("runs:detail", args=[run.pk]), {"step": 400})
    assert 'id="step-400"' in response.content.decode()
    for bad in ("x", "-1", "1e3", "9" * 20):
        assert auth_client.get(reverse("runs:detail", args=[run.pk]), {"step": bad}).status_code == 400
