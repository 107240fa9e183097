"""What LlamaIndex's and DSPy's instrumentations wrap around a run (object
reprs, ToolOutput JSON, the field protocol, wrapper LLM spans), unwrapped; and
generated junk in those shapes, which never fails a request. Trimmed from
real exports (tests/tracing/test_trace_llama_index.py, test_trace_dspy.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.core.models import Run
from tests.tracing import test_ingest_otlp as otlp_tests
from tests.tracing.test_ingest_otlp_bad_input import assert_consistent
from tests.tracing.test_ingest_otlp_mapping import oi_llm, span
from tracing.core.formats import payloads
from tracing.core.formats.otlp import TraceState, describe, map_trace
from tracing.store.models import IngestedSpan, Step

token = otlp_tests.token
post = otlp_tests.post

STOP = ("StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
        "additional_kwargs={}, blocks=[TextBlock(block_type='text', text='It is 1044483.')]), structured_...")
TOOL_OUTPUT = json.dumps({"blocks": [{"text": "1044483"}], "tool_name": "calculate",
                          "raw_input": {"args": [], "kwargs": {"expression": "1021 * 1023"}},
                          "raw_output": "1044483", "is_error": False})
DSPY_CALL = ("[[ ## next_thought ## ]]\nI should multiply.\n\n[[ ## next_tool_name ## ]]\ncalculate\n\n"
             '[[ ## next_tool_args ## ]]\n{"expression": "1021 * 1023"}\n\n[[ ## completed ## ]]')
DSPY_FINISH = ("[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n"
               "[[ ## next_tool_args ## ]]\n{}\n\n[[ ## completed ## ]]")
DSPY_ANSWER = "[[ ## reasoning ## ]]\nThe tool said so.\n\n[[ ## answer ## ]]\nIt is 1044483.\n\n[[ ## completed ## ]]"


def _kinds(steps):
    return [(s.kind, s.tool, s.text) for s in steps]


def test_payload_shapes_unwrap():
    assert payloads.answer_text(STOP) == "It is 1044483." and payloads.is_object_repr(STOP)
    assert not payloads.is_object_repr("It is 1044483.")
    assert payloads.tool_result(TOOL_OUTPUT) == ("1044483", "", "")
    assert payloads.tool_result('"1044483"') == ("1044483", "", "")
    assert payloads.tool_args('{"kwargs": {"query": "q"}}') == {"query": "q"}
    assert payloads.task_text('{"input_args": {"question": "What is 1021 * 1023?"}}') == "What is 1021 * 1023?"
    assert payloads.known_task('{"init_state": {"is_running": false}}') is None
    msg = payloads.field_message({"role": "assistant", "content": DSPY_CALL, "calls": [], "reasoning": ""})
    assert (msg["reasoning"], msg["content"]) == ("I should multiply.", "")
    assert msg["calls"] == [{"id": "", "name": "calculate", "arguments": {"expression": "1021 * 1023"}}]


def test_llama_index_wrapper_llm_spans_are_one_call_and_the_stop_event_is_not_the_final():
    root = span(1, {"openinference.span.kind": "CHAIN", "input.value": '{"init_state": {"is_running": false}}',
                    "output.value": STOP}, parent="", dur_ms=900, name="FunctionAgent.run")
    prepare = span(2, {"openinference.span.kind": "LLM", "llm.model_name": "m", "input.value": '{"tools": []}',
                       "output.value": '{"messages": []}'})
    outer = span(3, {"openinference.span.kind": "LLM", "llm.model_name": "m", "input.value": '{"messages": []}'},
                 dur_ms=60)
    inner = oi_llm(4, inputs=[{"role": "user", "content": "What is 1021 * 1023?"}], calls=[
        ("c1", "calculate", {"expression": "1021 * 1023"})], prompt=20, completion=7)
    inner.parent_id = outer.span_id
    tool = span(5, {"openinference.span.kind": "TOOL", "tool.name": "calculate",
                    "input.value": '{"kwargs": {"expression": "1021 * 1023"}}', "output.value": TOOL_OUTPUT})
    answer = oi_llm(6, inputs=[{"role": "user", "content": "What is 1021 * 1023?"}], content="It is 1044483.",
                    prompt=30, completion=7)
    steps, calls = map_trace([root, prepare, outer, inner, tool, answer], TraceState())
    assert _kinds(steps) == [("action", "calculate", 'calculate({"expression": "1021 * 1023"})'),
                             ("observation", "calculate", "1044483"), ("final", None, "It is 1044483.")]
    assert len(calls) == 2 and sum(s.prompt_tokens for s in steps) == 50
    assert describe([root, prepare, outer, inner, tool, answer]).prompt == "What is 1021 * 1023?"


def test_a_wrapper_llm_span_in_a_later_batch_is_still_not_a_call():
    state = TraceState()
    inner = oi_llm(4, content="It is 1044483.", prompt=30, completion=7)
    inner.parent_id = "3" * 16
    first, _ = map_trace([inner], state)
    outer = span(3, {"openinference.span.kind": "LLM", "llm.model_name": "m", "llm.token_count.prompt": 30})
    outer.span_id = "3" * 16
    later, calls = map_trace([outer], state)
    assert len(first) == 1 and later == [] and calls == []


def test_dspy_protocol_tool_spans_and_finish():
    root = span(1, {"openinference.span.kind": "CHAIN", "input.value": json.dumps(
        {"input_args": {"question": "What is 1021 * 1023?"}}), "output.value": json.dumps(
        {"trajectory": {}, "reasoning": "The tool said so.", "answer": "It is 1044483."})},
        parent="", dur_ms=900, name="ReAct.forward")
    spans = [root, oi_llm(2, content=DSPY_CALL),
             span(3, {"openinference.span.kind": "TOOL", "input.value": '{"kwargs": {"expression": "1021 * 1023"}}',
                      "output.value": '"1044483"'}, name="calculate.__call__"),
             oi_llm(4, content=DSPY_FINISH),
             span(5, {"openinference.span.kind": "TOOL", "input.value": '{"kwargs": {}}',
                      "output.value": '"Completed."'}, name="finish.__call__"),
             oi_llm(6, content=DSPY_ANSWER)]
    steps, _ = map_trace(spans, TraceState())
    assert _kinds(steps) == [("thought", None, "I should multiply."),
                             ("action", "calculate", 'calculate({"expression": "1021 * 1023"})'),
                             ("observation", "calculate", "1044483"), ("thought", None, "Done."),
                             ("thought", None, "The tool said so."), ("final", None, "It is 1044483.")]
    assert steps[1].args == {"expression": "1021 * 1023"}
    assert describe(spans).prompt == "What is 1021 * 1023?"


# --- generated junk in these shapes -----------------------------------------------

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
field_name = st.sampled_from(["next_thought", "next_tool_name", "next_tool_args", "reasoning", "answer",
                              "completed", "x"])
protocol = st.lists(st.tuples(field_name, st.one_of(st.text(max_size=20), st.sampled_from(
    ["{", "{}", '{"a": [1', "finish", "calculate", "[[ ## x ## ]]"]))), max_size=5).map(
    lambda fs: "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fs))
reprs = st.builds(lambda name, inner: f"{name}(result={inner}", st.sampled_from(["StopEvent", "A", "X_1"]),
                  st.one_of(st.text(max_size=30), st.just("text='a\\'"), st.just("content=\"b\\\\\""),
                            st.just("text='\\x00\\N{'")))
shaped = st.one_of(protocol, reprs, st.sampled_from([TOOL_OUTPUT, '"q"', '{"kwargs": 3}', '{"kwargs": {}}',
                                                    '{"input_args": {"question": 1}}', '{"raw_output": null, '
                                                    '"tool_name": 5, "is_error": "yes"}', '{"init_state": []}']),
                   st.text(max_size=20))


@PROPERTY_SETTINGS
@given(value=shaped)
def test_the_unwrappers_take_any_text(value):
    assert isinstance(payloads.answer_text(value), str)
    assert isinstance(payloads.task_text(value), str)
    assert isinstance(payloads.tool_result(value)[0], str)
    payloads.tool_args(value)
    msg = payloads.field_message({"role": "assistant", "content": value, "calls": [], "reasoning": ""})
    assert isinstance(msg["content"], str) and all(isinstance(c["name"], str) for c in msg["calls"])


def _attr(key: str, value) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


junk_span = st.builds(
    lambda n, parent, kind, name, inp, out, tokens: {
        "traceId": "ab" * 16, "spanId": f"{n:016x}", "parentSpanId": parent, "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n * 1000), "endTimeUnixNano": str(
            1_700_000_000_000_000_000 + n * 1000 + 500),
        "attributes": [_attr("openinference.span.kind", kind), _attr("input.value", inp),
                       _attr("llm.output_messages.0.message.content", out),
                       _attr("llm.output_messages.0.message.role", "assistant"), *(
                           [_attr("llm.token_count.prompt", tokens)] if tokens else [])]},
    st.integers(1, 6), st.sampled_from(["", f"{1:016x}", f"{2:016x}", f"{3:016x}"]),
    st.sampled_from(["LLM", "TOOL", "CHAIN"]), st.sampled_from(["calculate.__call__", "finish.__call__", ".__call__",
                                                                 "OpenAILike.astream_chat"]),
    shaped, shaped, st.one_of(st.none(), st.integers(0, 2**40)))


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(batches=st.lists(st.lists(junk_span, min_size=1, max_size=5), min_size=1, max_size=3))
def test_framework_shaped_junk_is_stored_or_refused_never_a_500(post, batches):
    for spans in batches:
        before = (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count())
        response = post(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode(),
                        content_type="application/json")
        assert response.status_code in (200, 400), response.content[:300]
        if response.status_code != 200:
            assert (Run.objects.count(), Step.objects.count(), IngestedSpan.objects.count()) == before
    assert_consistent()
