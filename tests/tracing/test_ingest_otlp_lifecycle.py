"""An OTLP trace over its life: batches out of order, a root that never
comes, the analysis handed to Celery, late run fields."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from runs.core.models import Run
from tests.tracing import test_ingest_otlp as otlp_tests
from tests.tracing.test_ingest_otlp import _agent_trace, _llm, _proto
from tracing.store import tasks
from tracing.store.ingest import services
from tracing.store.models import ExternalRun, Step

pytestmark = pytest.mark.django_db

# The endpoint's fixtures, shared with its own tests.
token = otlp_tests.token
post = otlp_tests.post


def _steps(run) -> list[tuple]:
    return [(s.index, s.kind, s.tool, s.text) for s in Step.objects.filter(run=run).order_by("index")]


def test_spans_sent_in_reverse_give_the_in_order_steps_derived_once(post, django_assert_max_num_queries):
    spans = _agent_trace()
    assert post(_proto(spans)).status_code == 200
    in_order = _steps(Run.objects.get(source="otlp"))
    Run.objects.all().delete()
    ExternalRun.objects.all().delete()

    backwards = sorted(spans, key=lambda s: -s["start"])  # the root (start 0) last
    assert post(_proto(backwards[:1])).status_code == 200
    # A span before the stored one: nothing is re-derived until the root comes
    # (each late batch costs what an in-order one does).
    with django_assert_max_num_queries(12):
        assert post(_proto(backwards[1:2])).status_code == 200
    run = Run.objects.get(source="otlp")
    assert ExternalRun.objects.get(run=run).state["deferred"] is True
    assert run.status == "running"
    assert post(_proto(backwards[2:])).status_code == 200
    run.refresh_from_db()
    assert _steps(run) == in_order
    assert run.status == "finished" and run.final_answer == "21 C" and run.step_count == len(in_order)


def test_a_trace_whose_root_never_comes_is_ended_by_closetraces(post):
    user = ("user", "How warm is Paris?", "")
    spans = [
        _llm(1, 10, calls=[("c1", "weather", '{"city": "Paris"}')], inputs=[user]),
        _llm(2, 30, content="It is 21 C.", inputs=[user, ("assistant", "", ""), ("tool", "21 C and sunny", "c1")]),
    ]
    assert post(_proto(spans)).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.status == "running"
    call_command("closetraces")  # the timeout has not passed: nothing ends
    run.refresh_from_db()
    assert run.status == "running"
    call_command("closetraces", older_than=0)
    run.refresh_from_db()
    assert run.status == "finished" and run.success is None  # a final answer is not a correct one: unscored
    assert "root span never arrived" in run.reason
    # The model's last plain answer became the one final, in place.
    assert [k for _, k, _, _ in _steps(run)] == ["action", "observation", "final"]
    assert run.final_answer == "It is 21 C."


def test_the_analysis_is_a_celery_task_after_the_commit(post, settings, monkeypatch,
                                                         django_capture_on_commit_callbacks):
    settings.INGEST_ANALYSE_INLINE = False
    sent = []
    monkeypatch.setattr(services.current_app, "send_task", lambda name, args: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        assert post(_proto(_agent_trace())).status_code == 200
    run = Run.objects.get(source="otlp")
    assert sent == [(services.ANALYSE_TASK, [[run.pk]])]
    assert not any("signals" in s.meta for s in Step.objects.filter(run=run))  # not analysed in the request
    tasks.analyse_ingested([run.pk])  # what the worker runs
    assert any("signals" in s.meta for s in Step.objects.filter(run=run))


def test_a_broker_that_is_down_does_not_fail_the_export(post, settings, monkeypatch,
                                                        django_capture_on_commit_callbacks):
    settings.INGEST_ANALYSE_INLINE = False

    def down(*args, **kwargs):
        raise ConnectionRefusedError("redis is down")

    monkeypatch.setattr(services.current_app, "send_task", down)
    with django_capture_on_commit_callbacks(execute=True):
        assert post(_proto(_agent_trace())).status_code == 200
    assert Run.objects.get(source="otlp").status == "finished"


def test_the_agent_name_may_come_in_a_later_batch(post):
    spans = _agent_trace()
    assert post(_proto(spans[:1])).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.settings["agent"] == "my-agent"  # the service, until the agent names itself
    assert post(_proto(spans[1:])).status_code == 200
    run.refresh_from_db()
    assert run.settings["agent"] == "weather-agent"


def _looping_trace() -> list[dict]:
    spans = []
    for turn in range(8):
        spans.append({"span_id": (100 + turn).to_bytes(8, "big"), "start": 10 + turn * 10, "attrs": {
            "openinference.span.kind": "TOOL", "tool.name": "search", "input.value": '{"query": "Calder Bay"}',
            "output.value": "No results."}})
    spans.append({"span_id": otlp_tests.ROOT, "parent": b"", "start": 0, "dur": 1000, "name": "agent", "attrs": {
        "openinference.span.kind": "AGENT", "input.value": "Where is Calder Bay?", "output.value": "Unknown."}})
    return spans


def test_a_looping_trace_gets_the_default_policy_replayed_shown_and_filtered(post, client, user):
    assert post(_proto(_looping_trace())).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.intervention_count >= 1 and "repetition" in run.intervention_detectors
    client.force_login(user)
    page = client.get(run.get_absolute_url()).content.decode()
    assert "intervention-band replayed" in page and "replayed" in page
    listed = client.get("/runs/?detector=repetition").content.decode()
    assert run.get_absolute_url() in listed


@pytest.mark.parametrize(("said", "success", "shown"), [(None, None, "unscored"), (True, True, "✓ correct"),
                                                       ("false", False, "✗ wrong")])
def test_a_trace_is_unscored_unless_it_says_its_outcome(post, auth_client, said, success, shown):
    # The same rule as the client's: a final answer is not a correct one.
    spans = _agent_trace()
    if said is not None:
        spans[-1]["attrs"]["agentlab.success"] = said
    assert post(_proto(spans)).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.status == "finished" and run.final_answer == "21 C"
    assert run.success is success
    page = auth_client.get(run.get_absolute_url()).content.decode()
    assert shown in page
    if success is not True:
        assert "✓ correct" not in page
