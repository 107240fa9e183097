"""A failed span whose cause is only in its standard ``exception`` event (no
status message), as pydantic-ai's tool spans arrive: the cause is the
observation, an error one. Spans made and encoded by the OpenTelemetry SDK
itself (protobuf and JSON encoders), sent to /v1/traces."""

from __future__ import annotations

import json

import pytest
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode_proto
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from runs.core.models import Run
from tests.tracing import test_ingest_otlp as otlp_tests
from tracing.store.models import Step

pytestmark = pytest.mark.django_db

token = otlp_tests.token
post = otlp_tests.post
CAUSE = "calculator backend unavailable"


def _pydantic_ai_trace(*, version: int) -> list:
    """agent run -> chat (a tool call) -> running tool (raises) -> chat (an answer), in pydantic-ai's shape."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "pyd"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("pydantic-ai")
    args_attr, tool_span = ("tool_arguments", "running tool") if version == 1 else (
        "gen_ai.tool.call.arguments", "execute_tool calculate")
    call = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "calculate",
                                             "arguments": {"expression": "fail"}}]}]
    with tracer.start_as_current_span("agent run", attributes={"gen_ai.agent.name": "agent",
                                                               "gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.system": "openai",
                "gen_ai.output.messages": json.dumps(call)}):
            pass
        # pydantic-ai lets the exception out of its span: the SDK records the
        # standard event; this span's status carries no description.
        with tracer.start_as_current_span(tool_span, record_exception=True, set_status_on_exception=False,
                                          attributes={"gen_ai.tool.name": "calculate", "gen_ai.tool.call.id": "call_1",
                                                      args_attr: '{"expression": "fail"}'}) as span:
            try:
                raise RuntimeError(CAUSE)
            except RuntimeError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR))
        with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                "gen_ai.response.finish_reasons": ["stop"], "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "The calculator is down."}]}])}):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("version", [1, 2])
def test_a_cause_only_in_the_exception_event_is_the_error_observation(post, encoding, version):
    spans = _pydantic_ai_trace(version=version)
    tool = next(s for s in spans if s.attributes.get("gen_ai.tool.name"))
    assert tool.status.description is None and tool.events[0].name == "exception"
    if encoding == "protobuf":
        response = post(encode_proto(spans).SerializeToString())
    else:  # what the SDK's OTLP/JSON exporter sends
        response = post(encode_json(spans).to_json().encode(), content_type="application/json")
    assert response.status_code == 200, response.content
    run = Run.objects.get(source="otlp")
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [(s.kind, s.tool) for s in steps] == [("action", "calculate"), ("observation", "calculate"),
                                                ("final", "")]
    assert steps[0].args == {"expression": "fail"}
    obs = steps[1]
    assert obs.text == f"RuntimeError: {CAUSE}"
    assert obs.meta["status"] == "error" and obs.meta["cause"] == f"RuntimeError: {CAUSE}"
    assert obs.meta["signals"]["obs_class"] == "error"
    assert run.final_answer == "The calculator is down."
