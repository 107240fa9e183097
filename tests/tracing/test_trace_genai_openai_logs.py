"""The openai client under the OpenTelemetry GenAI instrumentation
(opentelemetry-instrumentation-openai-v2) with message content in **log
events** (``event_only``: one ``gen_ai.client.inference.operation.details``
event per model call, none of it on the spans), exported by the SDK's real
OTLP/HTTP exporters for spans and for logs, against a scripted model and a
live agentlab. Spans and logs travel apart: each order of arrival must give
the same run, step for step."""

from __future__ import annotations

import contextlib
import json

import pytest

from tests.projects import project_of
from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw
from tracing.store.ingest.writes import token_create
from tracing.store.models import IngestedSpan, ModelCall, PendingEvent

pytest.importorskip("opentelemetry.instrumentation.openai_v2")

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = "You are a careful calculator agent."
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}}
    for name, arg in (("calculate", "expression"), ("search", "query"))]
# spans-mid-run: the first model call's span arrives (without its messages)
# while the run goes on; the logs come at the end.
ORDERS = ["logs-first", "spans-first", "spans-mid-run"]


@pytest.fixture
def events_only(monkeypatch):
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "event_only")
    # Nothing leaves before the test flushes: the order of arrival is the test's.
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
    monkeypatch.setenv("OTEL_BLRP_SCHEDULE_DELAY", "600000")
    monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_initialized", False)


@contextlib.contextmanager
def _log_provider(live_server, user):
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    _, token = token_create(user=user, project_id=project_of(user).pk, name="logs")
    provider = LoggerProvider(resource=Resource.create({"service.name": "framework-test"}))
    exporter = OTLPLogExporter(endpoint=f"{live_server.url}/v1/logs", headers={"Authorization": f"Bearer {token}"})
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    try:
        yield provider
    finally:
        provider.shutdown()


def _run(live_server, user, script, order: str) -> tuple[str, ScriptedModel]:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    tools = {"calculate": lambda a: fw.calculate(a["expression"]), "search": lambda a: fw.search(a["query"])}
    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider, \
            _log_provider(live_server, user) as logs:
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider, logger_provider=logs)
        try:
            client = openai.OpenAI(base_url=model.url, api_key="test")
            tracer = provider.get_tracer("calc-agent")
            messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": fw.TASK}]
            answer = None
            with tracer.start_as_current_span("invoke_agent calc-agent", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc-agent"}):
                for turn in range(20):
                    reply = client.chat.completions.create(model="scripted-model", messages=messages, tools=TOOLS)
                    if turn == 0 and order == "spans-mid-run":
                        assert provider.force_flush(30_000)
                    message = reply.choices[0].message
                    if not message.tool_calls:
                        answer = message.content
                        break
                    messages.append(message.model_dump(exclude_none=True))
                    for call in message.tool_calls:
                        with tracer.start_as_current_span(f"execute_tool {call.function.name}", attributes={
                                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                                "gen_ai.tool.call.id": call.id}):
                            try:
                                result = tools[call.function.name](json.loads(call.function.arguments))
                            except RuntimeError as exc:  # told to the model, as agents do
                                result = f"Error: RuntimeError: {exc}"
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            if order == "logs-first":
                assert logs.force_flush(30_000)
                assert PendingEvent.objects.exists()  # waiting for their spans, in Postgres
            assert provider.force_flush(30_000)
            assert logs.force_flush(30_000)
        finally:
            instrumentor.uninstrument()
    assert answer is not None, "the scripted model never answered"
    return answer, model


def _tokens(model: ScriptedModel) -> list[int]:
    return [len(json.dumps(r)) // 4 for r in model.requests]


@pytest.mark.parametrize("order", ORDERS)
def test_messages_in_log_events_arrive_whole_in_any_order(live_server, user, events_only, order):
    answer, model = _run(live_server, user, fw.NORMAL, order)
    assert answer == fw.ANSWER
    run = fw.only_run()
    steps = fw.assert_finished(run, answer=fw.ANSWER, actions=1)
    assert [(s.kind, s.tool, s.text, s.args) for s in steps] == [
        ("action", "calculate", 'calculate({"expression": "1021 * 1023"})', {"expression": "1021 * 1023"}),
        ("observation", "calculate", "1044483", None),
        ("final", "", fw.ANSWER, None),
    ]
    call_id = steps[0].meta["tool_call_id"]
    assert call_id.startswith("call_") and steps[1].meta["tool_call_id"] == call_id
    assert not any(s.meta.get("content_captured") is False for s in steps)
    # Tokens as the model reported them, one model call per request.
    assert [s.prompt_tokens for s in steps if s.prompt_tokens] == _tokens(model)
    assert [s.completion_tokens for s in steps if s.completion_tokens] == [7, 7]
    calls = list(ModelCall.objects.filter(run=run).order_by("step_index"))
    assert [c.step_index for c in calls] == [0, 2] and len(model.requests) == 2
    assert run.context["system"] == SYSTEM and run.settings["agent"] == "calc-agent"
    assert not PendingEvent.objects.exists()  # every event joined its span
    # The content came by the logs: the chat spans themselves carry none.
    chats = [p for p in IngestedSpan.objects.values_list("payload", flat=True)
             if p["attrs"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2
    assert all("gen_ai.output.messages" not in p["attrs"] and p["events"] for p in chats)


def test_a_loop_told_in_log_events_gets_its_repetition_bands(live_server, user, events_only):
    _run(live_server, user, fw.LOOP, "spans-first")
    run = fw.only_run()
    steps = fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
    assert {json.dumps(s.args) for s in steps if s.kind == "action"} == {json.dumps(fw.LOOP_QUERY)}
    assert [s.text for s in steps if s.kind == "observation"] == ["No results."] * fw.LOOP_TURNS
    fw.assert_loop_interrupted(run)


def test_a_tool_error_told_in_log_events_is_an_error_observation(live_server, user, events_only):
    _run(live_server, user, fw.ERRORED, "logs-first")
    run = fw.only_run()
    steps = fw.assert_finished(run, answer="The calculator is down.", actions=1)
    obs = fw.assert_error_observation(steps)
    assert obs.text == f"Error: RuntimeError: {fw.ERROR}"


def test_served_by_gunicorn_with_the_analysis_in_a_worker(user, events_only):
    """As a new user runs it: gunicorn serves /v1/traces and /v1/logs, a Celery
    worker analyses the run (INGEST_ANALYSE_INLINE off), spans before logs."""
    import time
    import types
    import uuid

    from django.db import connection

    from tests.ops.drill import start_gunicorn
    from tests.servers import start_worker, stop

    db_name = connection.settings_dict["NAME"]
    queue = f"agentlab-hotlp-{uuid.uuid4().hex[:8]}"
    env = {"INGEST_ANALYSE_INLINE": "false", "RUN_QUEUE": queue, "REDIS_URL": "redis://127.0.0.1:6379/13"}
    web, port = start_gunicorn(db_name=db_name, application_name=f"agentlab-{queue}", workers=2, threads=2, env=env)
    worker = start_worker(db_name=db_name, queue=queue, env=env)
    try:
        _run(types.SimpleNamespace(url=f"http://127.0.0.1:{port}"), user, fw.LOOP, "spans-first")
        run = fw.only_run()
        steps = fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
        assert [s.text for s in steps if s.kind == "observation"] == ["No results."] * fw.LOOP_TURNS
        # The worker's analysis marks the steps derived with the logs' messages
        # (a first analysis, of the spans alone, may have run before they came).
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not any(
                s.meta.get("replayed_intervention") for s in fw.steps_of(run)):
            time.sleep(0.5)
        fw.assert_loop_interrupted(run)
    finally:
        stop(web)
        stop(worker)
