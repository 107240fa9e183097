"""Bad and hostile OTLP input: each case a 4xx naming the problem or stored
sanely (cut, cleaned), never a 500, never half-written; and generated junk
thrown at the JSON and protobuf encodings (Hypothesis)."""

from __future__ import annotations

import json
import math

import pytest
from django.db.models import Count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from runs.core.models import Run
from tests.tracing import test_ingest_otlp as otlp_tests
from tests.tracing.test_ingest_otlp import ROOT, TRACE, _proto, _request, _sid
from tracing.core.formats.otlp import MAX_ATTRIBUTE_CHARS, MAX_COUNT
from tracing.store.models import ExternalRun, IngestedSpan, Step

pytestmark = pytest.mark.django_db

# The endpoint's fixtures, shared with its own tests.
token = otlp_tests.token
post = otlp_tests.post

PROPERTY_SETTINGS = settings(max_examples=80, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _root(attrs: dict, **extra) -> dict:
    return {"span_id": ROOT, "parent": b"", "start": 0, "dur": 100, "name": "agent",
            "attrs": {"openinference.span.kind": "AGENT", **attrs}, **extra}


def _tool(n: int, attrs: dict, **extra) -> dict:
    return {"span_id": _sid(n), "start": n, "attrs": {"openinference.span.kind": "TOOL", **attrs}, **extra}


def _llm_tokens(n: int, prompt) -> dict:
    return {"span_id": _sid(n), "start": n, "attrs": {
        "openinference.span.kind": "LLM", "llm.model_name": "m", "llm.token_count.prompt": prompt,
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "ok"}}


def assert_consistent() -> None:
    """Nothing half-written: every run holds exactly the steps its summary counts,
    numbered 0..n-1, and every trace exactly the spans it counts."""
    counts = dict(Step.objects.values_list("run_id").annotate(n=Count("id")))
    for run_id, step_count in Run.objects.filter(source="otlp").values_list("pk", "step_count"):
        assert counts.get(run_id, 0) == step_count
        indices = list(Step.objects.filter(run_id=run_id).order_by("index").values_list("index", flat=True))
        assert indices == list(range(len(indices)))
    spans = dict(IngestedSpan.objects.values_list("trace_id").annotate(n=Count("id")))
    for ext_id, span_count in ExternalRun.objects.values_list("pk", "span_count"):
        assert spans.get(ext_id, 0) == span_count
    assert ExternalRun.objects.count() == Run.objects.filter(source="otlp").count()


def test_nul_in_the_root_input_is_stored_cleaned(post):
    assert post(_proto([_root({"input.value": "find\x00 it", "output.value": "done\x00"})])).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.prompt == "find\ufffd it" and run.final_answer == "done\ufffd"
    assert_consistent()


@pytest.mark.parametrize("prompt", [10**10, 2**63 - 1, 1e300, math.inf, math.nan])
def test_absurd_token_counts_are_capped(post, prompt):
    spans = [_llm_tokens(2, 0 if isinstance(prompt, float) else prompt), _root({"output.value": "done"})]
    request = _request(spans)
    for kv in request.resource_spans[0].scope_spans[0].spans[0].attributes:
        if kv.key == "llm.token_count.prompt" and isinstance(prompt, float):
            kv.value.double_value = prompt
    body = request.SerializeToString()
    assert post(body).status_code == 200
    step = Step.objects.get(index=0)
    assert 0 <= step.prompt_tokens <= MAX_COUNT
    assert_consistent()


def test_a_200_character_tool_name_is_cut(post):
    assert post(_proto([_tool(2, {"tool.name": "t" * 200, "output.value": "x"})])).status_code == 200
    assert {len(s.tool) for s in Step.objects.all()} == {120}
    assert_consistent()


def test_a_10_mb_attribute_is_stored_cut(post, settings):
    big = "x" * (10 * 1024 * 1024)
    assert post(_proto([_tool(2, {"tool.name": "read", "output.value": big})])).status_code == 200
    obs = Step.objects.get(kind="observation")
    assert len(obs.text) < MAX_ATTRIBUTE_CHARS + 100 and "cut by agentlab" in obs.text
    assert_consistent()


def test_spans_whose_parents_never_arrive_are_kept_and_the_trace_closes(post):
    orphan = {"span_id": _sid(5), "parent": _sid(77), "start": 5, "attrs": {"tool.name": "search",
                                                                           "output.value": "found"}}
    assert post(_proto([orphan])).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.status == "running" and run.step_count == 2
    from django.core.management import call_command

    call_command("closetraces", older_than=0)
    run.refresh_from_db()
    assert run.status == "finished" and "root span never arrived" in run.reason
    assert_consistent()


def test_wrapped_payloads_that_are_not_json_stay_text(post):
    spans = [_root({"input.value": '{"messages": [["user", "unterminated', "output.value": '{"messages": ['})]
    assert post(_proto(spans)).status_code == 200
    run = Run.objects.get(source="otlp")
    assert run.prompt == '{"messages": [["user", "unterminated' and run.final_answer == '{"messages": ['


def _json_body(spans: list) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def _json_span(**fields) -> dict:
    return {"traceId": TRACE.hex(), "spanId": "00000000000000aa", "name": "s", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [], **fields}


@pytest.mark.parametrize("raw", [
    # Integers past Python's 4,300-digit conversion limit.
    _json_body([_json_span(attributes=[{"key": "n", "value": {"intValue": 0}}])]).replace(b'"intValue": 0',
                                                                                       b'"intValue": ' + b"9" * 5000),
    _json_body([_json_span()]).replace(b'"startTimeUnixNano": "1"', b'"startTimeUnixNano": ' + b"1" * 5000),
    _json_body([_json_span(attributes=[{"key": "n", "value": {"intValue": "9" * 5000}}])]),
    # Lone surrogates, escaped as JSON allows.
    _json_body([_json_span(name="x")]).replace(b'"name": "x"', b'"name": "\\udc00"'),
    _json_body([_json_span(attributes=[{"key": "input.value", "value": {"stringValue": "x"}}])]).replace(
        b'"stringValue": "x"', b'"stringValue": "a\\udfffb"'),
    # A double past a float's range.
    _json_body([_json_span(attributes=[{"key": "d", "value": {"doubleValue": 0}}])]).replace(
        b'"doubleValue": 0', b'"doubleValue": 1e999'),
], ids=["int-5000-digits", "time-5000-digits", "intvalue-string-5000-digits", "surrogate-name",
        "surrogate-value", "double-overflow"])
def test_json_bodies_that_cannot_be_stored_are_a_4xx_with_a_message(post, raw):
    response = post(raw, content_type="application/json")
    assert 400 <= response.status_code < 500
    assert response.json()["message"]
    assert not Run.objects.exists()


# --- generated junk ---------------------------------------------------------------

odd_text = st.one_of(st.text(max_size=30), st.sampled_from(
    ["", "\x00", "final_answer", '{"task": "t"}', '{"messages": [["user", "q"]]}', '{"args": [], "kwargs": {}}',
     "LLM", "TOOL", "AGENT", "CHAIN", "execute_tool", "chat", "Error: boom", "[", "{"]))
hex_id = st.one_of(st.binary(min_size=0, max_size=17).map(bytes.hex), st.sampled_from(["", "0" * 16, "z" * 16]))
any_value = st.recursive(
    st.one_of(st.builds(lambda v: {"stringValue": v}, odd_text), st.builds(lambda v: {"intValue": v}, st.one_of(
        st.integers(), st.text(max_size=25))), st.builds(lambda v: {"doubleValue": v}, st.floats()),
        st.builds(lambda v: {"boolValue": v}, st.booleans()), st.just({}), odd_text),
    lambda inner: st.one_of(st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3)),
                            st.builds(lambda kvs: {"kvlistValue": {"values": kvs}},
                                      st.lists(st.fixed_dictionaries({"key": odd_text, "value": inner}), max_size=3))),
    max_leaves=6)
known_keys = st.sampled_from(["openinference.span.kind", "input.value", "output.value", "tool.name",
                              "llm.output_messages.0.message.content", "llm.output_messages.0.message.role",
                              "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                              "llm.token_count.prompt", "gen_ai.operation.name", "gen_ai.input.messages",
                              "gen_ai.output.messages", "gen_ai.tool.call.id", "agent.name", "llm.model_name"])
attribute = st.fixed_dictionaries({"key": st.one_of(known_keys, odd_text), "value": any_value})
json_span = st.fixed_dictionaries({
    "traceId": st.one_of(st.just(TRACE.hex()), hex_id), "spanId": hex_id,
    "parentSpanId": st.one_of(st.just(""), st.just(ROOT.hex()), hex_id),
    "name": odd_text, "startTimeUnixNano": st.one_of(st.integers(-5, 2**65).map(str), st.integers(-5, 2**65)),
    "endTimeUnixNano": st.one_of(st.integers(0, 2**64 - 1).map(str), st.just("x")),
    "attributes": st.lists(attribute, max_size=6),
    "status": st.one_of(st.just({}), st.fixed_dictionaries({"code": st.sampled_from([0, 1, 2, "STATUS_CODE_ERROR", 9]),
                                                            "message": odd_text})),
    # Span events: the standard `exception` one names a failure's cause.
    "events": st.one_of(st.lists(st.fixed_dictionaries({
        "name": st.one_of(st.just("exception"), odd_text),
        "attributes": st.lists(st.fixed_dictionaries({"key": st.sampled_from(
            ["exception.type", "exception.message", "exception.stacktrace"]), "value": any_value}), max_size=3),
    }), max_size=2), odd_text, st.just(None)),
})
json_body = st.one_of(
    st.builds(lambda spans: {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, st.lists(json_span, max_size=5)),
    st.recursive(st.one_of(st.none(), st.integers(), odd_text), lambda i: st.one_of(
        st.lists(i, max_size=3), st.dictionaries(st.sampled_from(["resourceSpans", "scopeSpans", "spans", "x"]), i,
                                                 max_size=3)), max_leaves=8),
)


@PROPERTY_SETTINGS
@given(bodies=st.lists(json_body, min_size=1, max_size=3))
def test_generated_otlp_json_never_answers_500_nor_half_writes(post, bodies):
    for body in bodies:
        before = (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count())
        response = post(json.dumps(body).encode(), content_type="application/json")
        assert response.status_code in (200, 400, 413, 415), response.content[:300]
        if response.status_code != 200:
            assert (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count()) == before
    assert_consistent()


def _pb_span(request: ExportTraceServiceRequest, spec: dict) -> None:
    sp = request.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.parent_span_id = spec["trace"], spec["span"], spec["parent"]
    sp.name = spec["name"]
    sp.start_time_unix_nano, sp.end_time_unix_nano = spec["start"], spec["end"]
    sp.status.code, sp.status.message = spec["code"], spec["message"]
    for key, value in spec["attrs"]:
        kv = sp.attributes.add()
        kv.key = key
        if isinstance(value, bool):
            kv.value.bool_value = value
        elif isinstance(value, int):
            kv.value.int_value = value
        elif isinstance(value, float):
            kv.value.double_value = value
        elif isinstance(value, bytes):
            kv.value.bytes_value = value
        else:
            kv.value.string_value = value


pb_text = odd_text.filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t))
pb_span = st.fixed_dictionaries({
    "trace": st.one_of(st.just(TRACE), st.binary(max_size=17)), "span": st.binary(min_size=0, max_size=9),
    "parent": st.one_of(st.just(b""), st.just(ROOT), st.binary(max_size=9)), "name": pb_text,
    "start": st.integers(0, 2**64 - 1), "end": st.integers(0, 2**64 - 1), "code": st.integers(0, 2),
    "message": pb_text,
    "attrs": st.lists(st.tuples(st.one_of(known_keys, pb_text), st.one_of(
        pb_text, st.integers(-(2**63), 2**63 - 1), st.floats(), st.booleans(), st.binary(max_size=8))), max_size=6),
})


@PROPERTY_SETTINGS
@given(specs=st.lists(pb_span, min_size=1, max_size=5), junk=st.one_of(st.none(), st.binary(max_size=40)))
def test_generated_otlp_protobuf_never_answers_500_nor_half_writes(post, specs, junk):
    request = ExportTraceServiceRequest()
    for spec in specs:
        _pb_span(request, spec)
    body = request.SerializeToString() if junk is None else junk
    before = (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count())
    response = post(body)
    assert response.status_code in (200, 400, 413, 415)
    if response.status_code != 200:
        assert (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count()) == before
    assert_consistent()
