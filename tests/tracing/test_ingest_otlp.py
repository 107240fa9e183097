"""POST /v1/traces: protobuf and JSON, de-dup, partial success, bad input, real exporters."""

from __future__ import annotations

import gzip
import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from runs.core.models import Run
from tests.projects import project_of
from tracing.core.formats.otlp import MAX_ATTRIBUTE_DEPTH
from tracing.store.ingest import services
from tracing.store.ingest.writes import token_create, token_revoke
from tracing.store.models import ExternalRun, IngestedSpan, Step

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
ROOT = b"\x00\x00\x00\x00\x00\x00\x00\x09"
MS = 1_000_000
T0 = 1_700_000_000_000 * MS


def _set(kv, value):
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    else:
        kv.value.string_value = value


def _request(spans: list[dict], service: str = "my-agent") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", service
    ss = rs.scope_spans.add()
    for spec in spans:
        sp = ss.spans.add()
        sp.trace_id = spec.get("trace_id", TRACE)
        sp.span_id = spec["span_id"]
        sp.parent_span_id = spec.get("parent", ROOT)
        sp.name = spec.get("name", "span")
        sp.start_time_unix_nano = T0 + spec["start"] * MS
        sp.end_time_unix_nano = T0 + (spec["start"] + spec.get("dur", 10)) * MS
        sp.status.code = spec.get("status", 0)
        for key, value in spec["attrs"].items():
            kv = sp.attributes.add()
            kv.key = key
            _set(kv, value)
    return request


def _sid(n: int) -> bytes:
    return n.to_bytes(8, "big")


def _llm(n: int, start: int, *, calls=(), content="", inputs=(), tokens=(0, 0)) -> dict:
    attrs: dict = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x",
                   "llm.token_count.prompt": tokens[0], "llm.token_count.completion": tokens[1],
                   "llm.output_messages.0.message.role": "assistant"}
    if content:
        attrs["llm.output_messages.0.message.content"] = content
    for j, (cid, name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        attrs.update({prefix + "id": cid, prefix + "function.name": name, prefix + "function.arguments": args})
    for i, (role, text, cid) in enumerate(inputs):
        attrs[f"llm.input_messages.{i}.message.role"] = role
        attrs[f"llm.input_messages.{i}.message.content"] = text
        if cid:
            attrs[f"llm.input_messages.{i}.message.tool_call_id"] = cid
    return {"span_id": _sid(n), "start": start, "attrs": attrs, "name": "ChatCompletion"}


def _agent_trace() -> list[dict]:
    user = ("user", "How warm is Paris?", "")
    return [
        _llm(1, 10, calls=[("c1", "weather", '{"city": "Paris"}')], content="Check the weather.", inputs=[user],
             tokens=(50, 7)),
        _llm(2, 30, calls=[("c2", "finish", '{"answer": "21 C"}')],
             inputs=[user, ("assistant", "Check the weather.", ""), ("tool", "21 C and sunny", "c1")],
             tokens=(80, 5)),
        {"span_id": ROOT, "parent": b"", "start": 0, "dur": 100, "name": "weather-agent",
         "attrs": {"openinference.span.kind": "AGENT", "input.value": "How warm is Paris?", "output.value": "21 C",
                   "agent.name": "weather-agent", "session.id": "conv-1"}},
    ]


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="otlp")[1]


@pytest.fixture
def post(client, token):
    def send(body: bytes, *, content_type="application/x-protobuf", token_=token, headers=None):
        extra = {"HTTP_AUTHORIZATION": f"Bearer {token_}"} if token_ else {}
        for key, value in (headers or {}).items():
            extra["HTTP_" + key.upper().replace("-", "_")] = value
        return client.generic("POST", "/v1/traces", body, content_type=content_type, **extra)

    return send


def _proto(spans: list[dict]) -> bytes:
    return _request(spans).SerializeToString()


def _status_message(response) -> str:
    # google.rpc.Status in protobuf: field 2 is the message; the text is in the bytes.
    return response.content.decode("utf-8", "replace")


@pytest.mark.django_db
def test_a_trace_becomes_a_finished_run_with_numbered_steps(post, user):
    response = post(_proto(_agent_trace()))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-protobuf"
    reply = ExportTraceServiceResponse.FromString(response.content)
    assert reply.partial_success.rejected_spans == 0
    run = Run.objects.get(source="otlp")
    assert (run.owner, run.provider, run.status, run.model_name, run.prompt, run.final_answer) == (
        user, "import", "finished", "gpt-x", "How warm is Paris?", "21 C")
    assert run.settings == {"trace_id": TRACE.hex(), "agent": "weather-agent", "conversation_id": "conv-1",
                            "service": "my-agent"}
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [(s.index, s.kind, s.tool) for s in steps] == [
        (0, "thought", ""), (1, "action", "weather"), (2, "observation", "weather"), (3, "final", "finish")]
    assert steps[1].args == {"city": "Paris"} and steps[2].text == "21 C and sunny"
    assert (run.step_count, run.prompt_tokens, run.completion_tokens) == (4, 130, 12)
    assert run.finished_at is not None


@pytest.mark.django_db
def test_resent_spans_are_not_duplicated(post):
    body = _proto(_agent_trace())
    post(body)
    assert post(body).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.step_count == Step.objects.filter(run=run).count() == 4
    assert IngestedSpan.objects.count() == 3


@pytest.mark.django_db
def test_spans_stream_in_across_requests_and_the_run_goes_live_then_finished(post):
    spans = _agent_trace()
    post(_proto(spans[:1]))
    run = Run.objects.get(source="otlp")
    assert run.status == "running" and run.step_count == 2
    post(_proto(spans[1:]))
    run.refresh_from_db()
    assert run.status == "finished" and run.step_count == 4


@pytest.mark.django_db
def test_a_late_span_is_put_back_in_order(post):
    spans = _agent_trace()
    post(_proto([spans[1]]))  # the second model call arrives first
    post(_proto([spans[0], spans[2]]))
    run = Run.objects.get(source="otlp")
    steps = list(Step.objects.filter(run=run).order_by("index").values_list("kind", "tool"))
    assert steps == [("thought", ""), ("action", "weather"), ("observation", "weather"), ("final", "finish")]
    assert run.step_count == 4 and run.prompt_tokens == 130


@pytest.mark.django_db
def test_traces_of_two_users_are_two_runs(post, other_user):
    post(_proto(_agent_trace()))
    other = token_create(user=other_user, project_id=project_of(other_user).pk, name="b")[1]
    post(_proto(_agent_trace()), token_=other)
    assert ExternalRun.objects.filter(external_id=TRACE.hex()).count() == 2
    assert sorted(Run.objects.values_list("owner__username", flat=True)) == ["alice", "bob"]


@pytest.mark.django_db
def test_otlp_json_is_accepted_and_answered_in_json(post):
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": TRACE.hex(), "spanId": "00000000000000aa", "name": "execute_tool weather",
        "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 5 * MS),
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                       {"key": "gen_ai.tool.name", "value": {"stringValue": "weather"}}]}]}]}]}
    response = post(json.dumps(body).encode(), content_type="application/json")
    assert response.status_code == 200
    assert response.json() == {}
    assert Step.objects.filter(run__source="otlp").count() == 2


@pytest.mark.django_db
def test_spans_without_genai_attributes_are_accepted_with_a_warning(post):
    response = post(_proto([{"span_id": _sid(5), "start": 1, "attrs": {"http.method": "GET"}}]),
                    content_type="application/json" if False else "application/x-protobuf")
    reply = ExportTraceServiceResponse.FromString(response.content)
    assert reply.partial_success.rejected_spans == 0
    assert "no OpenInference or GenAI attributes" in reply.partial_success.error_message


@pytest.mark.django_db
def test_a_trace_over_the_span_cap_is_a_partial_success(post, monkeypatch):
    monkeypatch.setattr(services, "MAX_SPANS_PER_TRACE", 2)
    response = post(_proto(_agent_trace()))
    reply = ExportTraceServiceResponse.FromString(response.content)
    assert reply.partial_success.rejected_spans == 3
    assert "more than 2 spans" in reply.partial_success.error_message
    assert Step.objects.count() == 0


@pytest.mark.django_db
def test_gzip_protobuf_is_accepted(post):
    response = post(gzip.compress(_proto(_agent_trace())), headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200
    assert Run.objects.get(source="otlp").step_count == 4


# --- bad input ----------------------------------------------------------------------


@pytest.mark.django_db
def test_a_missing_token_is_401(post):
    response = post(_proto(_agent_trace()), token_=None)
    assert response.status_code == 401
    assert "missing bearer token" in _status_message(response)


@pytest.mark.django_db
def test_a_revoked_token_is_401(post, user):
    token, plain = token_create(user=user, project_id=project_of(user).pk, name="x")
    token_revoke(token=token)
    response = post(_proto(_agent_trace()), token_=plain, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["message"] == "unknown or revoked token"


@pytest.mark.django_db
def test_malformed_protobuf_is_400(post):
    response = post(b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert response.status_code == 400
    assert "not an OTLP ExportTraceServiceRequest" in _status_message(response)


@pytest.mark.django_db
def test_malformed_json_is_400(post):
    response = post(b'{"resourceSpans": [', content_type="application/json")
    assert response.status_code == 400
    assert "not JSON" in response.json()["message"]


@pytest.mark.django_db
def test_a_span_with_a_missing_id_rejects_the_whole_request(post):
    spans = _agent_trace()
    spans[1]["span_id"] = b""
    response = post(_proto(spans))
    assert response.status_code == 400
    assert "spans[1].spanId is missing" in _status_message(response)
    assert Run.objects.count() == 0 and IngestedSpan.objects.count() == 0


@pytest.mark.django_db
def test_wrong_types_in_json_are_400(post):
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "spanId": "00000000000000aa"}]}]}]}
    response = post(json.dumps(body).encode(), content_type="application/json")
    assert response.status_code == 400
    assert "resourceSpans[0].scopeSpans[0].spans[0].traceId must be a hex string" in response.json()["message"]


@pytest.mark.django_db
def test_invalid_utf8_json_is_400(post):
    response = post(b'{"resourceSpans": "\xff"}', content_type="application/json")
    assert response.status_code == 400
    assert "not valid UTF-8" in response.json()["message"]


def _deep_request(levels: int) -> bytes:
    request = _request([{"span_id": _sid(1), "start": 0, "attrs": {}}])
    value = request.resource_spans[0].scope_spans[0].spans[0].attributes.add()
    value.key = "deep"
    node = value.value
    for _ in range(levels):
        kv = node.kvlist_value.values.add()
        kv.key = "k"
        node = kv.value
    node.string_value = "leaf"
    return request.SerializeToString()


@pytest.mark.django_db
def test_deeply_nested_attribute_values_are_400(post):
    response = post(_deep_request(MAX_ATTRIBUTE_DEPTH + 1))
    assert response.status_code == 400
    assert f"attributes['deep'] is nested more than {MAX_ATTRIBUTE_DEPTH} levels" in _status_message(response)
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_values_nested_past_protobufs_own_limit_are_400(post):
    response = post(_deep_request(200))
    assert response.status_code == 400
    assert "nested too deeply" in _status_message(response)


@pytest.mark.django_db
def test_a_21_mib_body_is_413(post, settings):
    settings.INGEST_MAX_BODY_BYTES = 20 * 1024 * 1024
    response = post(b"\x00" * (21 * 1024 * 1024))
    assert response.status_code == 413
    assert "the limit is 20971520 bytes" in _status_message(response)


@pytest.mark.django_db
def test_an_unsupported_content_type_is_415(post):
    response = post(b"<spans/>", content_type="application/xml")
    assert response.status_code == 415
    assert "Content-Type must be application/x-protobuf or application/json" in response.json()["message"]


# --- the real OpenTelemetry exporters against a running server -------------------------


def _provider(exporter):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "exporter-test"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _emit_genai_trace(provider) -> str:
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
            "gen_ai.conversation.id": "conv-7"}) as root:
        with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m-1", "gen_ai.usage.input_tokens": 11,
                "gen_ai.usage.output_tokens": 3, "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "Look it up."},
                    {"type": "tool_call", "id": "t1", "name": "lookup", "arguments": {"q": "x"}}]}])}):
            pass
        with tracer.start_as_current_span("execute_tool lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "t1",
                "gen_ai.tool.call.result": "x is 4"}):
            pass
        root.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "4"}]}]))
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.force_flush()
    return trace_id


def _check_genai_run(trace_id: str) -> None:
    run = Run.objects.get(settings__trace_id=trace_id)
    assert (run.status, run.model_name, run.final_answer) == ("finished", "m-1", "4")
    assert run.settings["agent"] == "planner" and run.settings["conversation_id"] == "conv-7"
    steps = list(Step.objects.filter(run=run).order_by("index").values_list("kind", "tool", "text"))
    assert steps == [("thought", "", "Look it up."), ("action", "lookup", 'lookup({"q": "x"})'),
                     ("observation", "lookup", "x is 4"), ("final", "", "4")]
    assert run.prompt_tokens == 11


@pytest.mark.django_db(transaction=True)
def test_the_protobuf_exporter_of_the_sdk(live_server, user):
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    token = token_create(user=user, project_id=project_of(user).pk, name="sdk")[1]
    exporter = OTLPSpanExporter(endpoint=f"{live_server.url}/v1/traces",
                                headers={"Authorization": f"Bearer {token}"}, compression=Compression.Gzip)
    provider = _provider(exporter)
    _check_genai_run(_emit_genai_trace(provider))
    provider.shutdown()


@pytest.mark.django_db(transaction=True)
def test_the_json_exporter(live_server, user):
    from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter

    token = token_create(user=user, project_id=project_of(user).pk, name="json")[1]
    exporter = OTLPSpanExporter(endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {token}"})
    provider = _provider(exporter)
    _check_genai_run(_emit_genai_trace(provider))
    provider.shutdown()


@pytest.mark.django_db(transaction=True)
def test_the_exporter_reports_a_bad_token(live_server):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": "Bearer al_bad"})
    provider = _provider(exporter)
    with provider.get_tracer("t").start_as_current_span("x") as sp:
        readable = sp
    assert exporter.export([readable]) == SpanExportResult.FAILURE
    assert Run.objects.count() == 0
    provider.shutdown()
