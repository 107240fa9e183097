"""An ingested trace's LLM spans as model calls: opening the call on an OTLP
run shows the messages, parameters, tools, output and usage the span carried."""

from __future__ import annotations

import json

import pytest

from tests.projects import project_of
from tracing.store.call_store import call_messages
from tracing.store.ingest.writes import token_create
from tracing.store.models import ModelCall, Step

pytestmark = pytest.mark.django_db

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
MS = 1_000_000
T0 = 1_700_000_000_000 * MS
SYSTEM = "You are a weather agent."
QUESTION = "How warm is Paris?"
TOOL = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}


def _attr(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def _span(n: int, start_ms: int, attrs: dict, *, parent: str = "", dur_ms: int = 40, name: str = "span") -> dict:
    return {"traceId": TRACE, "spanId": f"{n:016x}", "parentSpanId": parent, "name": name,
            "startTimeUnixNano": str(T0 + start_ms * MS), "endTimeUnixNano": str(T0 + (start_ms + dur_ms) * MS),
            "attributes": [_attr(k, v) for k, v in attrs.items()]}


def _oi_llm(n: int, start_ms: int, inputs: list[dict], output: dict, tokens: tuple[int, int]) -> dict:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
             "llm.invocation_parameters": json.dumps({"temperature": 0.2, "max_tokens": 300}),
             "llm.tools.0.tool.json_schema": json.dumps(TOOL),
             "llm.token_count.prompt": tokens[0], "llm.token_count.completion": tokens[1],
             "llm.output_messages.0.message.role": "assistant"}
    for i, msg in enumerate(inputs):
        attrs[f"llm.input_messages.{i}.message.role"] = msg["role"]
        attrs[f"llm.input_messages.{i}.message.content"] = msg["content"]
        if msg.get("tool_call_id"):
            attrs[f"llm.input_messages.{i}.message.tool_call_id"] = msg["tool_call_id"]
    if output.get("content"):
        attrs["llm.output_messages.0.message.content"] = output["content"]
    for j, call in enumerate(output.get("calls", [])):
        prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
        attrs.update({prefix + "id": call[0], prefix + "function.name": call[1], prefix + "function.arguments": call[2]})
    return _span(n, start_ms, attrs, parent="0000000000000001", name="ChatCompletion")


def _post(client, user, spans: list[dict]):
    token = token_create(user=user, project_id=project_of(user).pk, name=f"t{len(spans)}-{spans[0]['spanId']}")[1]
    body = {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "weather-agent")]},
                               "scopeSpans": [{"spans": spans}]}]}
    response = client.generic("POST", "/v1/traces", json.dumps(body).encode(), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    return response


def _weather_trace() -> tuple[list[dict], list[dict]]:
    first_in = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    second_in = [*first_in, {"role": "assistant", "content": ""},
                 {"role": "tool", "content": "18 C and sunny", "tool_call_id": "call_1"}]
    first = [_oi_llm(2, 0, first_in, {"calls": [("call_1", "weather", '{"city": "Paris"}')]}, (120, 15)),
             _span(3, 50, {"openinference.span.kind": "TOOL", "tool.name": "weather",
                           "input.value": '{"city": "Paris"}', "output.value": "18 C and sunny"},
                   parent="0000000000000001", dur_ms=5)]
    second = [_oi_llm(4, 60, second_in, {"content": "It is 18 C in Paris."}, (160, 9)),
              _span(1, 0, {"openinference.span.kind": "AGENT", "input.value": QUESTION,
                           "output.value": "It is 18 C in Paris."}, dur_ms=120, name="agent")]
    return first, second


def test_an_llm_span_becomes_the_model_call_it_describes(client, auth_client, user):
    first, second = _weather_trace()
    _post(client, user, first)  # the exporter sends the trace in two batches
    _post(client, user, second)
    calls = list(ModelCall.objects.select_related("tools", "params_ref").order_by("step_index"))
    assert len(calls) == 2
    run_id = calls[0].run_id
    thoughts = list(Step.objects.filter(run_id=run_id).exclude(prompt_tokens=0).values_list("index", flat=True))
    assert [c.step_index for c in calls] == thoughts
    one, two = calls
    assert call_messages(one) == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    assert call_messages(two)[-1] == {"role": "tool", "content": "18 C and sunny", "tool_call_id": "call_1"}
    assert one.params == {"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 300}
    assert one.tools.body == [TOOL]
    assert one.response["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "weather", "arguments": '{"city": "Paris"}'}
    assert two.response["choices"][0]["message"]["content"] == "It is 18 C in Paris."
    assert (one.prompt_tokens, one.completion_tokens, one.latency_ms) == (120, 15, 40.0)

    page = auth_client.get(f"/runs/{run_id}/calls/{two.step_index}/", HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    text = page.content.decode()
    assert "18 C and sunny" in text and SYSTEM in text and "It is 18 C in Paris." in text


def test_genai_json_messages_and_request_parameters_are_the_call(client, user):
    inputs = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": "Warm."}], "finish_reason": "stop"}]
    llm = _span(2, 0, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1",
                       "gen_ai.request.temperature": 0.5, "gen_ai.request.max_tokens": 64,
                       "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
                       "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
                       "gen_ai.response.finish_reasons": "stop",
                       "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 2})
    _post(client, user, [llm])
    call = ModelCall.objects.get()
    assert call_messages(call) == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    assert call.params == {"model": "gpt-4.1", "temperature": 0.5, "max_tokens": 64}
    assert call.response["choices"][0] == {"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": "Warm."}}
    assert (call.prompt_tokens, call.completion_tokens) == (30, 2)


def test_a_trace_rebuilt_in_order_keeps_one_call_per_turn(client, user):
    first, second = _weather_trace()
    _post(client, user, second)  # the later half first: the steps are derived again when the rest comes
    _post(client, user, first)
    calls = list(ModelCall.objects.order_by("step_index"))
    assert len(calls) == 2
    assert call_messages(calls[1])[0] == {"role": "system", "content": SYSTEM}
    # Derived in one pass, the second call stores only what it adds to the first's system prompt and question.
    assert (calls[1].prefix_len, len(calls[1].suffix_ids)) == (2, 2)


def test_an_llm_span_without_content_or_usage_records_no_call(client, user):
    _post(client, user, [_span(2, 0, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})])
    assert Step.objects.count() == 1 and not ModelCall.objects.exists()


def test_image_and_audio_parts_are_kept_as_placeholders_without_their_bytes(client, auth_client, user):
    png = "data:image/png;base64," + "A" * 40_000
    oi = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
          "llm.input_messages.0.message.role": "user",
          "llm.input_messages.0.message.contents.0.message_content.type": "text",
          "llm.input_messages.0.message.contents.0.message_content.text": "What is in <b>this</b> picture?",
          "llm.input_messages.0.message.contents.1.message_content.type": "image",
          "llm.input_messages.0.message.contents.1.message_content.image.image.url": png,
          "llm.input_messages.0.message.contents.2.message_content.type": "image",
          "llm.input_messages.0.message.contents.2.message_content.image.image.url": "https://example.org/cat.jpg",
          "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "A cat."}
    genai_in = [{"role": "user", "parts": [
        {"type": "text", "content": "And this?"},
        {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": "UklG" * 2000},
        {"type": "uri", "modality": "image", "mime_type": "image/jpeg", "uri": "https://example.org/dog.jpg"},
        {"type": "image", "content": "data:image/gif;base64," + "R0lG" * 1000}]}]
    genai = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
             "gen_ai.input.messages": json.dumps(genai_in),
             "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "A dog."}]}])}
    _post(client, user, [_span(2, 0, oi, parent="0000000000000001"), _span(3, 50, genai, parent="0000000000000001"),
                         _span(1, 0, {"openinference.span.kind": "AGENT", "input.value": "look"}, dur_ms=100)])
    one, two = ModelCall.objects.order_by("step_index")
    assert call_messages(one) == [{"role": "user", "content": [
        {"type": "text", "text": "What is in <b>this</b> picture?"},
        {"type": "image", "image": {"mime_type": "image/png", "inline_bytes": 30_000}, "omitted": True},
        {"type": "image", "image": {"url": "https://example.org/cat.jpg"}, "omitted": True}]}]
    assert call_messages(two)[0]["content"][1:] == [
        {"type": "audio", "audio": {"mime_type": "audio/wav", "inline_bytes": 6_000}, "omitted": True},
        {"type": "image", "image": {"url": "https://example.org/dog.jpg", "mime_type": "image/jpeg"}, "omitted": True},
        {"type": "image", "image": {"mime_type": "image/gif", "inline_bytes": 3_000}, "omitted": True}]
    assert "AAAA" not in json.dumps(call_messages(one))  # the bytes are not stored

    first = auth_client.get(f"/runs/{one.run_id}/calls/{one.step_index}/", HTTP_HX_REQUEST="true").content.decode()
    assert "[image: image/png, 29 KB inline — not shown]" in first and "[image: by URL — not shown]" in first
    assert "What is in &lt;b&gt;this&lt;/b&gt; picture?" in first
    second = auth_client.get(f"/runs/{two.run_id}/calls/{two.step_index}/", HTTP_HX_REQUEST="true").content.decode()
    assert "[audio: audio/wav, 5 KB inline — not shown]" in second
    assert "[image: image/jpeg, by URL — not shown]" in second and "[image: image/gif, 2 KB inline — not shown]" in second


def test_a_traced_call_with_a_1_mb_message_and_html_in_every_field_opens_cut_folded_and_inert(client, auth_client, user):
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    tool = {"type": "function", "function": {"name": "<svg onload=alert(3)>", "parameters": {"description": evil}}}
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": f"gpt-4o {evil}",
             "llm.invocation_parameters": json.dumps({"temperature": 0.1, "stop": [evil], "seed": evil}),
             "llm.tools.0.tool.json_schema": json.dumps(tool),
             "llm.input_messages.0.message.role": f"system {evil}",
             "llm.input_messages.0.message.content": evil,
             "llm.input_messages.1.message.role": "user",
             "llm.input_messages.1.message.content": evil + "x" * 1_000_000 + "THE-END",
             "llm.input_messages.2.message.role": "user",
             "llm.input_messages.2.message.contents.0.message_content.type": "image",
             "llm.input_messages.2.message.contents.0.message_content.image.image.url": f"javascript:{evil}",
             "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.content": evil,
             "llm.output_messages.0.message.tool_calls.0.tool_call.id": evil,
             "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": evil,
             "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps({"q": evil}),
             "llm.token_count.prompt": 250_000, "llm.token_count.completion": 5}
    _post(client, user, [_span(2, 0, attrs, parent="0000000000000001"),
                         _span(1, 0, {"openinference.span.kind": "AGENT", "input.value": evil}, dur_ms=100)])
    call = ModelCall.objects.get()
    sent = call_messages(call)
    # The decoder cut the attribute (MAX_ATTRIBUTE_CHARS) and says so; the call keeps what arrived.
    assert "cut by agentlab: 1,000,060 characters in all" in sent[1]["content"] and "THE-END" not in sent[1]["content"]
    response = auth_client.get(f"/runs/{call.run_id}/calls/{call.step_index}/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200 and len(body) < 100_000
    assert "characters in all, the first 20000 shown" in body
    assert "[image: by URL — not shown]" in body and "javascript:" not in body
    for raw in ("<script", "<img src=x", "<svg onload"):
        assert raw not in body, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "&lt;svg onload=alert(3)&gt;" in body
    replay = auth_client.get(f"/runs/{call.run_id}/calls/{call.step_index}/replay/", HTTP_HX_REQUEST="true")
    assert replay.status_code == 200
    assert all(raw not in replay.content.decode() for raw in ("<script", "<img src=x", "<svg onload"))
