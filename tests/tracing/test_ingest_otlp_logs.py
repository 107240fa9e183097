"""POST /v1/logs: GenAI log events joined to their spans whichever arrives first,
in protobuf and JSON, resent or not, with junk beside them."""

from __future__ import annotations

import base64
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from google.protobuf import json_format
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from runs.core.models import Run
from tests.tracing.test_ingest_otlp import ROOT, TRACE, _proto, _sid
from tracing.store.models import IngestedSpan, PendingEvent, Step

MS = 1_000_000
T0 = 1_700_000_000_000 * MS
SYSTEM = "You are a careful calculator agent."
TASK = "What is 1021 * 1023?"
ANSWER = "1021 * 1023 = 1044483."
ARGS = '{"expression": "1021 * 1023"}'
CALL = {"id": "c1", "type": "function", "function": {"name": "calculate", "arguments": ARGS}}


def _any(value) -> dict:
    """A Python value as an OTLP JSON AnyValue."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _any(v)} for k, v in value.items()]}}
    return {}


def _record(span: int, name: str, body=None, *, at: int = 0, attrs=None, trace: bytes = TRACE) -> dict:
    record = {"timeUnixNano": str(T0 + at * MS), "eventName": name, "traceId": trace.hex(),
              "spanId": _sid(span).hex() if span else "",
              "attributes": [{"key": k, "value": _any(v)} for k, v in {"gen_ai.system": "openai",
                                                                       **(attrs or {})}.items()]}
    if body is not None:
        record["body"] = _any(body)
    return record


def _logs_json(records: list[dict]) -> dict:
    return {"resourceLogs": [{"resource": {"attributes": [{"key": "service.name", "value": _any("calc")}]},
                              "scopeLogs": [{"logRecords": records}]}]}


def _logs_proto(records: list[dict]) -> bytes:
    data = json.loads(json.dumps(_logs_json(records)))
    for rec in data["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        # OTLP JSON writes ids in hex; protobuf's JSON mapping wants base64.
        for key in ("traceId", "spanId"):
            rec[key] = base64.b64encode(bytes.fromhex(rec[key])).decode()
    return json_format.ParseDict(data, ExportLogsServiceRequest()).SerializeToString()


# The events opentelemetry-instrumentation-openai-v2 emits on its v1.30 path
# (content capture on): one per input message, one per choice.
def _events(*, content: bool = True) -> list[dict]:
    def msg(role, **body):
        return body if content else {k: v for k, v in body.items() if k != "content"}

    call = CALL if content else {"id": "c1", "type": "function", "function": {"name": "calculate"}}
    return [
        _record(1, "gen_ai.system.message", msg("system", content=SYSTEM), at=10),
        _record(1, "gen_ai.user.message", msg("user", content=TASK), at=10),
        _record(1, "gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                                     "message": {"role": "assistant", "tool_calls": [call]}}, at=12),
        _record(3, "gen_ai.system.message", msg("system", content=SYSTEM), at=30),
        _record(3, "gen_ai.user.message", msg("user", content=TASK), at=30),
        _record(3, "gen_ai.assistant.message", {"tool_calls": [call]}, at=30),
        _record(3, "gen_ai.tool.message", msg("tool", content="1044483", id="c1"), at=30),
        _record(3, "gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", **({"content": ANSWER} if content else {})}},
                at=32),
    ]


def _chat(n: int, start: int, finish: str, tokens: tuple[int, int]) -> dict:
    return {"span_id": _sid(n), "start": start, "dur": 5, "name": "chat scripted-model", "attrs": {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "scripted-model",
        "gen_ai.response.model": "scripted-model", "gen_ai.response.finish_reasons": finish,
        "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1]}}


def _spans() -> list[dict]:
    return [
        _chat(1, 10, "tool_calls", (40, 7)),
        {"span_id": _sid(2), "start": 20, "dur": 2, "name": "execute_tool calculate", "attrs": {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calculate", "gen_ai.tool.call.id": "c1"}},
        _chat(3, 30, "stop", (60, 9)),
        {"span_id": ROOT, "parent": b"", "start": 0, "dur": 100, "name": "invoke_agent calc-agent",
         "attrs": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc-agent"}},
    ]


@pytest.fixture
def post(client, token):
    def send(path: str, body, *, content_type="application/x-protobuf", token_=token):
        if not isinstance(body, bytes):
            body, content_type = json.dumps(body).encode(), "application/json"
        extra = {"HTTP_AUTHORIZATION": f"Bearer {token_}"} if token_ else {}
        return client.generic("POST", path, body, content_type=content_type, **extra)

    return send


@pytest.fixture
def token(user):
    from tests.projects import project_of
    from tracing.store.ingest.writes import token_create

    return token_create(user=user, project_id=project_of(user).pk, name="otlp")[1]


def _logs_reply(response) -> ExportLogsServiceResponse:
    assert response.status_code == 200, response.content
    reply = ExportLogsServiceResponse()
    reply.ParseFromString(response.content)
    return reply


def _steps(run: Run) -> list[tuple]:
    return [(s.kind, s.tool, s.text, s.args, s.prompt_tokens, s.completion_tokens)
            for s in Step.objects.filter(run=run).order_by("index")]


WHOLE = [
    ("action", "calculate", f"calculate({ARGS})", {"expression": "1021 * 1023"}, 40, 7),
    ("observation", "calculate", "1044483", None, 0, 0),
    ("final", "", ANSWER, None, 60, 9),
]


def _assert_whole(run: Run) -> None:
    run.refresh_from_db()
    assert _steps(run) == WHOLE
    assert run.status == "finished" and run.final_answer == ANSWER
    assert run.success is None  # the trace says nothing of its outcome
    assert run.prompt == TASK and run.context["system"] == SYSTEM
    obs = Step.objects.get(run=run, kind="observation")
    assert obs.meta["tool_call_id"] == "c1" and obs.meta["status"] == "ok"
    assert not PendingEvent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_events_before_their_spans_wait_in_postgres_and_join_them(post, encoding):
    logs = _logs_proto(_events()) if encoding == "protobuf" else _logs_json(_events())
    reply = post("/v1/logs", logs)
    assert reply.status_code == 200 and not Run.objects.exists()
    assert PendingEvent.objects.count() == 8
    assert post("/v1/traces", _proto(_spans())).status_code == 200
    _assert_whole(Run.objects.get(source="otlp"))


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_events_after_their_ended_trace_derive_its_steps_again(post, encoding):
    assert post("/v1/traces", _proto(_spans())).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.status == "finished" and run.final_answer == ""  # nothing said yet
    logs = _logs_proto(_events()) if encoding == "protobuf" else _logs_json(_events())
    reply = post("/v1/logs", logs)
    assert reply.status_code == 200
    _assert_whole(run)


@pytest.mark.django_db
def test_events_for_a_live_trace_wait_for_its_root_and_split_batches_join(post):
    spans = _spans()
    events = _events()
    assert post("/v1/traces", _proto(spans[:1])).status_code == 200  # the first model call, still live
    assert post("/v1/logs", _logs_proto(events[:2])).status_code == 200  # part of its messages
    assert post("/v1/logs", _logs_proto(events[2:5])).status_code == 200
    assert post("/v1/traces", _proto(spans[1:3])).status_code == 200
    assert post("/v1/logs", _logs_proto(events[5:])).status_code == 200
    assert post("/v1/traces", _proto(spans[3:])).status_code == 200  # the root ends it
    _assert_whole(Run.objects.get(source="otlp"))


@pytest.mark.django_db
def test_a_resent_log_batch_is_stored_once(post):
    assert post("/v1/logs", _logs_proto(_events())).status_code == 200
    assert post("/v1/logs", _logs_proto(_events())).status_code == 200
    assert PendingEvent.objects.count() == 8
    assert post("/v1/traces", _proto(_spans())).status_code == 200
    assert post("/v1/logs", _logs_proto(_events())).status_code == 200  # after the join, too
    run = Run.objects.get(source="otlp")
    _assert_whole(run)
    assert all(len(p.get("events", [])) in (0, 3, 5) for p in IngestedSpan.objects.values_list("payload", flat=True))


@pytest.mark.django_db
def test_without_content_capture_the_events_still_name_the_calls(post):
    assert post("/v1/traces", _proto(_spans())).status_code == 200
    assert post("/v1/logs", _logs_proto(_events(content=False))).status_code == 200
    run = Run.objects.get(source="otlp")
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [(s.kind, s.tool) for s in steps] == [("action", "calculate"), ("observation", "calculate"),
                                                ("final", "")]
    assert steps[0].meta["tool_call_id"] == "c1"
    assert steps[1].text == "" and steps[1].meta["content_captured"] is False


@pytest.mark.django_db
def test_the_newer_operation_details_event_joins_its_span(post):
    inputs = [{"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
              {"role": "user", "parts": [{"type": "text", "content": TASK}]}]
    details = [
        _record(1, "gen_ai.client.inference.operation.details", at=12, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
                {"type": "tool_call", "id": "c1", "name": "calculate", "arguments": {"expression": "1021 * 1023"}}]}]}),
        _record(3, "gen_ai.client.inference.operation.details", at=32, attrs={
            "gen_ai.operation.name": "chat", "gen_ai.input.messages": [*inputs, {"role": "assistant", "parts": [
                {"type": "tool_call", "id": "c1", "name": "calculate", "arguments": {"expression": "1021 * 1023"}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "1044483"}]}],
            "gen_ai.output.messages": [{"role": "assistant", "finish_reason": "stop",
                                        "parts": [{"type": "text", "content": ANSWER}]}]}),
    ]
    assert post("/v1/logs", _logs_json(details)).status_code == 200
    assert post("/v1/traces", _proto(_spans())).status_code == 200
    _assert_whole(Run.objects.get(source="otlp"))


@pytest.mark.django_db
def test_records_that_are_not_genai_events_are_a_partial_success(post):
    records = [*_events(), _record(1, "", "GET /health 200"), _record(0, "gen_ai.user.message", {"content": "x"})]
    reply = _logs_reply(post("/v1/logs", _logs_proto(records)))
    assert reply.partial_success.rejected_log_records == 2
    assert "not GenAI events" in reply.partial_success.error_message
    assert "no trace and span id" in reply.partial_success.error_message
    assert PendingEvent.objects.count() == 8  # the GenAI events beside them are kept
    response = post("/v1/logs", _logs_json(records))
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedLogRecords"] == "2"


@pytest.mark.django_db
@pytest.mark.parametrize(("body", "content_type", "status", "says"), [
    (b"\xff\x00junk", "application/x-protobuf", 400, "ExportLogsServiceRequest"),
    (b"{not json", "application/json", 400, "JSON"),
    (b"<logs/>", "text/xml", 415, "Content-Type"),
])
def test_bad_log_bodies_are_clear_4xx(post, body, content_type, status, says):
    response = post("/v1/logs", body, content_type=content_type)
    assert response.status_code == status
    assert says in response.content.decode("utf-8", "replace")


@pytest.mark.django_db
def test_logs_need_a_token_and_a_known_span_id_shape(post):
    assert post("/v1/logs", _logs_json(_events()), token_=None).status_code == 401
    bad = _logs_json([{**_record(1, "gen_ai.user.message", {"content": "x"}), "spanId": "abc"}])
    response = post("/v1/logs", bad)
    assert response.status_code == 400 and "spanId" in response.json()["message"]
    assert not PendingEvent.objects.exists()


@pytest.mark.django_db
def test_closetraces_drops_events_whose_span_never_came(post, settings):
    assert post("/v1/logs", _logs_proto(_events())).status_code == 200
    PendingEvent.objects.update(received_at=timezone.now() - timedelta(seconds=settings.INGEST_TRACE_TIMEOUT_S + 1))
    call_command("closetraces")
    assert not PendingEvent.objects.exists()


# --- junk ---------------------------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                     st.text(max_size=20))
_json = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                     max_leaves=20)
_names = st.sampled_from(["gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message", "gen_ai.assistant.message",
                          "gen_ai.client.inference.operation.details", "other", ""])


@st.composite
def _junk_record(draw) -> dict:
    record = _record(draw(st.integers(1, 4)), draw(_names), draw(_json), at=draw(st.integers(0, 50)),
                     attrs={"gen_ai.input.messages": draw(_json)} if draw(st.booleans()) else None)
    # Sometimes a field itself is junk (a number for an id, a list for a body).
    field = draw(st.sampled_from(["", "traceId", "spanId", "body", "timeUnixNano", "eventName", "attributes"]))
    if field:
        record[field] = draw(_json)
    return record


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(_junk_record(), max_size=6), encoding=st.sampled_from(["json", "protobuf"]))
def test_junk_logs_are_a_4xx_or_a_partial_success_and_lose_no_event(post, junk, encoding):
    PendingEvent.objects.all().delete()
    Run.objects.all().delete()
    good = _events()
    records = [*good, *junk]
    try:
        body = _logs_proto(records) if encoding == "protobuf" else _logs_json(records)
    except (json_format.ParseError, ValueError, TypeError):
        return  # not expressible in protobuf: the JSON case covers it
    response = post("/v1/logs", body)
    assert response.status_code in (200, 400), response.content
    if response.status_code == 200:
        # Every well-formed GenAI event is kept (junk that is one counts too).
        assert PendingEvent.objects.count() >= len(good)
        assert post("/v1/traces", _proto(_spans())).status_code == 200
        run = Run.objects.get(source="otlp")
        assert run.status == "finished" and Step.objects.filter(run=run).exists()
    else:
        assert not PendingEvent.objects.exists()  # refused whole: nothing half-stored


@pytest.mark.django_db
def test_events_after_the_trace_timeout_still_join_it(post):
    assert post("/v1/traces", _proto(_spans()[:3])).status_code == 200  # the root never comes
    call_command("closetraces", older_than=0)
    run = Run.objects.get(source="otlp")
    assert run.status == "finished" and "root span never arrived" in run.reason
    assert post("/v1/logs", _logs_proto(_events())).status_code == 200
    run.refresh_from_db()
    assert _steps(run) == WHOLE and run.final_answer == ANSWER
    assert run.status == "finished" and "root span never arrived" in run.reason  # still true


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.integers(0, 400), junk=st.binary(max_size=60))
def test_protobuf_bytes_cut_or_garbled_are_a_400_or_a_partial_success(post, prefix, junk):
    PendingEvent.objects.all().delete()
    body = _logs_proto(_events())[:prefix] + junk
    assume(body)  # Django's test client sends an empty body without its Content-Type
    response = post("/v1/logs", body)
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert not PendingEvent.objects.exists()


def _log_queries(post, calls: int) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    Run.objects.all().delete()
    trace = bytes([calls]) * 16
    chats = [{**_chat(n, 10 * n, "tool_calls", (40, 7)), "trace_id": trace} for n in range(1, calls + 1)]
    assert post("/v1/traces", _proto(chats)).status_code == 200  # live: no root yet
    records = [_record(n, "gen_ai.user.message", {"content": TASK}, at=10 * n, trace=trace)
               for n in range(1, calls + 1)]
    with CaptureQueriesContext(connection) as queries:
        assert post("/v1/logs", _logs_proto(records)).status_code == 200
    assert all(p.get("events") for p in IngestedSpan.objects.filter(trace__run__in=Run.objects.all())
               .values_list("payload", flat=True))
    return len(queries)


@pytest.mark.django_db
def test_joining_events_to_stored_spans_costs_the_same_queries_for_2_or_20_spans(post):
    # One statement per kind of write, never one per span.
    assert _log_queries(post, 2) == _log_queries(post, 20)
