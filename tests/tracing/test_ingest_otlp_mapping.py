"""Span -> step mapping and OTLP decoding: pure, no database."""

from __future__ import annotations

import json

import pytest

from tracing.core.formats.otlp import (
    MAX_ATTRIBUTE_DEPTH,
    OtlpError,
    Span,
    TraceState,
    classify,
    decode_json,
    decode_protobuf,
    describe,
    map_spans,
    needs_rebuild,
)

TRACE = "0af7651916cd43dd8448eb211c80319c"
MS = 1_000_000


def span(n: int, attrs: dict, *, parent: str = "a" * 16, start: int | None = None, dur_ms: int = 5,
         status: str = "unset", name: str = "span", message: str = "") -> Span:
    start_ns = (start if start is not None else n * 100) * MS
    return Span(trace_id=TRACE, span_id=f"{n:016x}", parent_id=parent, name=name, start_ns=start_ns,
                end_ns=start_ns + dur_ms * MS, attrs=attrs, status=status, status_message=message)


def oi_llm(n: int, *, inputs=(), content: str | None = None, calls=(), prompt=0, completion=0, **kw) -> Span:
    attrs: dict = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-test"}
    for i, msg in enumerate(inputs):
        attrs[f"llm.input_messages.{i}.message.role"] = msg["role"]
        if "content" in msg:
            attrs[f"llm.input_messages.{i}.message.content"] = msg["content"]
        if "tool_call_id" in msg:
            attrs[f"llm.input_messages.{i}.message.tool_call_id"] = msg["tool_call_id"]
    attrs["llm.output_messages.0.message.role"] = "assistant"
    if content is not None:
        attrs["llm.output_messages.0.message.content"] = content
    for j, (cid, name, args) in enumerate(calls):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        attrs[prefix + "id"] = cid
        attrs[prefix + "function.name"] = name
        attrs[prefix + "function.arguments"] = json.dumps(args)
    if prompt:
        attrs["llm.token_count.prompt"] = prompt
        attrs["llm.token_count.completion"] = completion
    return span(n, attrs, **kw)


def kinds(steps):
    return [(s.kind, s.tool) for s in steps]


SYSTEM = {"role": "system", "content": "You are an agent."}
USER = {"role": "user", "content": "Where was the author born?"}


def _openinference_trace() -> list[Span]:
    return [
        oi_llm(1, inputs=[SYSTEM, USER], content="Search first.", calls=[("call_0", "search", {"query": "novel"})],
               prompt=100, completion=10, dur_ms=40),
        # agentlab's loop re-keys the call id to call_1 in the context it sends back.
        oi_llm(2, inputs=[SYSTEM, USER, {"role": "assistant", "content": "Search first."},
                          {"role": "tool", "tool_call_id": "call_1", "content": "[1] The novel, by Orren"}],
               content=None, calls=[("call_1", "search", {"query": "Orren"})], prompt=200, completion=8),
        oi_llm(3, inputs=[SYSTEM, USER, {"role": "assistant", "content": "Search first."},
                          {"role": "tool", "tool_call_id": "call_1", "content": "[1] The novel, by Orren"},
                          {"role": "assistant", "content": ""},
                          {"role": "tool", "tool_call_id": "call_3", "content": "Orren was born in Calder Bay"}],
               content="Born in Calder Bay.", calls=[("call_2", "finish", {"answer": "Calder Bay"})],
               prompt=300, completion=12),
        span(9, {"openinference.span.kind": "AGENT", "input.value": "Where was the author born?",
                 "output.value": "Calder Bay", "agent.name": "my-agent"}, parent="", start=0, dur_ms=1000,
             name="agent"),
    ]


def test_openinference_llm_spans_become_react_steps():
    steps = map_spans(_openinference_trace(), TraceState())
    assert [(s.index, s.kind, s.tool) for s in steps] == [
        (0, "thought", None), (1, "action", "search"), (2, "observation", "search"), (3, "action", "search"),
        (4, "observation", "search"), (5, "thought", None), (6, "final", "finish"),
    ]
    assert steps[1].args == {"query": "novel"}
    assert steps[2].text == "[1] The novel, by Orren"
    assert steps[4].text == "Orren was born in Calder Bay"
    assert (steps[6].text, steps[6].args) == ("Calder Bay", {"answer": "Calder Bay"})
    # Tokens and the model call's latency go on the first step of each turn.
    assert [(s.prompt_tokens, s.completion_tokens) for s in steps if s.prompt_tokens] == [(100, 10), (200, 8),
                                                                                           (300, 12)]
    assert steps[0].latency_ms == 40


def test_streaming_in_batches_gives_the_same_steps_as_one_batch():
    spans = _openinference_trace()
    whole = map_spans(spans, TraceState())
    state = TraceState()
    parts = []
    for batch in (spans[:1], spans[1:3], spans[3:]):
        state = TraceState.from_dict(json.loads(json.dumps(state.to_dict())))  # stored between requests
        assert not needs_rebuild(batch, state)
        parts.extend(map_spans(batch, state))
    assert [s.to_dict() for s in parts] == [s.to_dict() for s in whole]
    assert state.finished and state.outcome == "finished" and state.final_answer == "Calder Bay"


def test_a_span_that_belongs_before_written_steps_needs_a_rebuild():
    spans = _openinference_trace()
    state = TraceState()
    map_spans([spans[1]], state)
    assert needs_rebuild([spans[0]], state)
    assert not needs_rebuild([spans[2]], state)


def test_describe_reads_the_run_fields():
    info = describe(_openinference_trace())
    assert (info.model, info.agent, info.prompt) == ("gpt-test", "my-agent", "Where was the author born?")


def test_genai_chat_and_execute_tool_spans_join_by_call_id():
    chat = span(1, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "reasoning", "content": "I need the weather."},
            {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}]}]),
    })
    tool = span(2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "gen_ai.tool.call.result": "rain"}, dur_ms=30)
    chat2 = span(3, {
        "gen_ai.operation.name": "chat", "gen_ai.usage.prompt_tokens": 70, "gen_ai.usage.completion_tokens": 3,
        "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [
            {"type": "tool_call_response", "id": "c1", "response": "rain"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Rain."}]}]),
    })
    steps = map_spans([chat, tool, chat2], TraceState())
    assert kinds(steps) == [("thought", None), ("action", "get_weather"), ("observation", "get_weather"),
                            ("thought", None)]
    assert steps[1].args == {"city": "Paris"} and steps[1].meta["tool_call_id"] == "c1"
    assert (steps[2].text, steps[2].latency_ms) == ("rain", 30)
    assert (steps[0].prompt_tokens, steps[3].prompt_tokens, steps[3].completion_tokens) == (50, 70, 3)


def test_a_tool_span_without_a_model_call_is_an_action_and_its_observation():
    tool = span(1, {"openinference.span.kind": "TOOL", "tool.name": "calc", "input.value": '{"expr": "1+1"}',
                    "output.value": "2"})
    steps = map_spans([tool], TraceState())
    assert kinds(steps) == [("action", "calc"), ("observation", "calc")]
    assert steps[0].args == {"expr": "1+1"} and steps[1].text == "2"


def test_spans_without_content_still_give_steps_with_tools_tokens_and_timing():
    chat = span(1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 9,
                    "gen_ai.usage.output_tokens": 4}, dur_ms=70)
    tool = span(2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}, dur_ms=20)
    steps = map_spans([chat, tool], TraceState())
    assert kinds(steps) == [("thought", None), ("action", "search"), ("observation", "search")]
    assert (steps[0].text, steps[0].prompt_tokens, steps[0].latency_ms) == ("", 9, 70)
    assert steps[0].meta["content_captured"] is False and steps[2].meta["content_captured"] is False
    assert steps[2].latency_ms == 20


def test_a_failed_tool_span_is_an_error_observation():
    tool = span(1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch"}, status="error",
                message="timeout after 30 s")
    steps = map_spans([tool], TraceState())
    assert (steps[1].kind, steps[1].text, steps[1].meta["status"]) == ("observation", "timeout after 30 s", "error")


def test_text_mode_output_is_parsed_into_thought_action_and_final():
    one = oi_llm(1, inputs=[USER], content="Thought: I should search.\nAction: Search[Paramore]")
    two = oi_llm(2, inputs=[USER], content="It is from Tennessee.\nFinal Answer: SUPPORTS")
    steps = map_spans([one, two], TraceState())
    assert kinds(steps) == [("thought", None), ("action", "Search"), ("thought", None), ("final", None)]
    assert (steps[1].args, steps[3].text) == ("Paramore", "SUPPORTS")


def test_a_root_agent_span_gives_the_final_answer_when_no_step_did():
    root = span(5, {"openinference.span.kind": "AGENT", "output.value": "42"}, parent="", start=0, dur_ms=900)
    steps = map_spans([oi_llm(1, inputs=[USER], content="Thinking."), root], TraceState())
    assert kinds(steps) == [("thought", None), ("final", None)]
    assert steps[1].text == "42"


def test_a_failed_root_span_ends_the_run_as_error():
    state = TraceState()
    root = span(5, {"gen_ai.operation.name": "invoke_agent"}, parent="", status="error", message="boom")
    steps = map_spans([root], state)
    assert kinds(steps) == [("error", None)] and steps[0].text == "boom"
    assert state.finished and state.outcome == "error"


def test_non_genai_child_spans_give_no_steps():
    http = span(1, {"http.method": "GET"})
    assert classify(http) == "other"
    assert map_spans([http], TraceState()) == []


@pytest.mark.parametrize(
    ("attrs", "kind"),
    [
        ({"openinference.span.kind": "TOOL", "gen_ai.operation.name": "chat"}, "tool"),
        ({"openinference.span.kind": "RETRIEVER"}, "tool"),
        ({"openinference.span.kind": "EMBEDDING"}, "other"),
        ({"gen_ai.operation.name": "invoke_agent"}, "agent"),
        ({"gen_ai.operation.name": "chat"}, "llm"),
        ({"gen_ai.tool.name": "x"}, "tool"),
        ({"gen_ai.request.model": "m"}, "llm"),
        ({}, "other"),
    ],
)
def test_classification_prefers_openinference_then_genai_then_attributes(attrs, kind):
    assert classify(span(1, attrs)) == kind


# --- decoding -------------------------------------------------------------------------


def _json_request(span_obj: dict) -> dict:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                            "value": {"stringValue": "svc"}}]},
                               "scopeSpans": [{"spans": [span_obj]}]}]}


GOOD = {"traceId": TRACE, "spanId": "00f067aa0ba902b7", "name": "chat", "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000500000000", "status": {"code": 2, "message": "bad"},
        "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                       {"key": "x", "value": {"arrayValue": {"values": [{"doubleValue": 1.5}, {"boolValue": True}]}}}]}


def test_otlp_json_decodes_ids_times_attributes_and_status():
    (decoded,) = decode_json(_json_request(GOOD))
    assert (decoded.trace_id, decoded.span_id, decoded.parent_id, decoded.service) == (
        TRACE, "00f067aa0ba902b7", "", "svc")
    assert decoded.duration_ms == 500
    assert decoded.attrs == {"gen_ai.usage.input_tokens": 12, "x": [1.5, True]}
    assert (decoded.status, decoded.status_message) == ("error", "bad")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"traceId": "abc"}, "spans[0].traceId must be 32 hex digits"),
        ({"traceId": "0" * 32}, "not all zero"),
        ({"traceId": None}, "spans[0].traceId is missing"),
        ({"spanId": None}, "spans[0].spanId is missing"),
        ({"spanId": "zz" * 8}, "spans[0].spanId must be 16 hex digits"),
        ({"startTimeUnixNano": "soon"}, "startTimeUnixNano must be an integer"),
        ({"attributes": {"k": "v"}}, "spans[0].attributes must be an array"),
        ({"attributes": [{"key": 1, "value": {}}]}, "attributes[0].key must be a string"),
        ({"attributes": [{"key": "k", "value": {"stringValue": 5}}]}, "stringValue must be a string"),
        ({"attributes": [{"key": "k", "value": {"weirdValue": 5}}]}, "unknown value type 'weirdValue'"),
        ({"name": 7}, "spans[0].name must be a string"),
    ],
)
def test_bad_otlp_json_names_the_field(change, message):
    with pytest.raises(OtlpError, match=None) as exc:
        decode_json(_json_request({**GOOD, **change}))
    assert message in str(exc.value)


def _nested(depth: int) -> dict:
    value: dict = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def test_attribute_values_nested_past_the_limit_are_refused():
    deep = {**GOOD, "attributes": [{"key": "deep", "value": _nested(MAX_ATTRIBUTE_DEPTH + 1)}]}
    with pytest.raises(OtlpError, match=f"nested more than {MAX_ATTRIBUTE_DEPTH} levels"):
        decode_json(_json_request(deep))
    ok = {**GOOD, "attributes": [{"key": "deep", "value": _nested(MAX_ATTRIBUTE_DEPTH)}]}
    assert decode_json(_json_request(ok))[0].attrs["deep"]


def test_the_body_must_be_an_object():
    with pytest.raises(OtlpError, match="the body must be an object"):
        decode_json([1])


def test_garbage_protobuf_is_refused():
    with pytest.raises(OtlpError, match="not an OTLP ExportTraceServiceRequest"):
        decode_protobuf(b"\xff\xff\xff\xff not protobuf")


def test_protobuf_with_invalid_utf8_in_a_string_is_refused():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    sp = request.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id, sp.name = bytes.fromhex(TRACE), b"\x01" * 8, "MARKER"
    raw = request.SerializeToString().replace(b"MARKER", b"MA\xff\xfeER")
    with pytest.raises(OtlpError, match="protobuf"):
        decode_protobuf(raw)


def test_protobuf_spans_need_ids_of_the_right_size():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    sp = request.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id, sp.span_id = bytes.fromhex(TRACE), b"\x01" * 4
    with pytest.raises(OtlpError, match=r"spans\[0\].spanId must be 8 bytes"):
        decode_protobuf(request.SerializeToString())
    sp.span_id = b""
    with pytest.raises(OtlpError, match=r"spans\[0\].spanId is missing"):
        decode_protobuf(request.SerializeToString())
