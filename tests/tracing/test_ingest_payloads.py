"""Framework payloads unwrapped, and the spans of each framework as recorded
(trimmed from real exports) mapped to exactly one final. Pure: no database."""

from __future__ import annotations

import json

from tests.tracing.test_ingest_otlp_mapping import oi_llm, span
from tracing.core.formats import payloads
from tracing.core.formats.otlp import TraceState, map_spans

LG_STATE = {"messages": [
    {"type": "human", "data": {"content": "What is 1021 * 1023?", "type": "human", "id": "h1"}},
    {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "calculate", "args": {}, "id": "call_1"}],
                            "usage_metadata": {"input_tokens": 82}}},
    {"type": "tool", "data": {"content": "1044483", "tool_call_id": "call_1", "status": "success"}},
    {"type": "ai", "data": {"content": "It is 1044483.", "usage_metadata": {"input_tokens": 149}}},
]}
RESPONSE = {"id": "resp_1", "object": "response", "status": "completed", "output": [
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Multiply."}]},
    {"type": "function_call", "call_id": "call_9", "name": "calculate", "arguments": '{"expression": "2*3"}'},
]}


def test_langgraph_input_state_and_tool_message():
    assert payloads.task_text('{"messages": [["user", "What is 1021 * 1023?"]]}') == "What is 1021 * 1023?"
    assert payloads.task_text(json.dumps(LG_STATE)) == "What is 1021 * 1023?"
    assert payloads.answer_text(json.dumps(LG_STATE)) == "It is 1044483."
    tool = {"type": "tool", "data": {"content": "Error: RuntimeError('down')", "tool_call_id": "call_1",
                                     "status": "error"}}
    assert payloads.tool_result(json.dumps(tool)) == ("Error: RuntimeError('down')", "error", "call_1")
    dumped = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
              "kwargs": {"content": "Done."}}
    assert payloads.answer_text(json.dumps({"messages": [dumped]})) == "Done."


def test_smolagents_task_and_tool_arguments():
    assert payloads.task_text('{"task": "Find it", "stream": false, "reset": true}') == "Find it"
    assert payloads.tool_args('{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"answer": "42"}}') == {
        "answer": "42"}
    assert payloads.tool_args('{"args": ["x"], "kwargs": {}}') == "x"


def test_responses_api_object():
    msg = payloads.response_message(json.dumps(RESPONSE))
    assert msg["reasoning"] == "Multiply." and msg["calls"][0]["id"] == "call_9"
    text = {"object": "response", "output": [{"type": "message", "content": [
        {"type": "output_text", "text": "It is 6."}]}]}
    assert payloads.answer_text(json.dumps(text)) == "It is 6."


def test_what_is_not_recognised_stays_text():
    broken = '{"messages": [["user", "unterminated'
    assert payloads.task_text(broken) == broken
    assert payloads.answer_text(broken) == broken
    assert payloads.tool_result(broken) == (broken, "", "")
    renamed = '{"msgs": [{"kind": "human", "body": "hi"}]}'  # a version that renamed things
    assert payloads.task_text(renamed) == renamed
    assert payloads.answer_text({"answer": 3}) == '{"answer": 3}'


def _kinds(steps):
    return [s.kind for s in steps]


def test_smolagents_final_answer_call_and_tool_span_are_one_final():
    llm = oi_llm(1, inputs=[{"role": "user", "content": "q"}], calls=[("c1", "final_answer", {"answer": "42"})])
    tool = span(2, {"openinference.span.kind": "TOOL", "tool.name": "final_answer",
                    "input.value": '{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"answer": "42"}}',
                    "output.value": "42"})
    root = span(3, {"openinference.span.kind": "AGENT", "input.value": '{"task": "q"}', "output.value": "42"},
                parent="", start=0, dur_ms=1000)
    steps = map_spans([llm, tool, root], TraceState())
    assert _kinds(steps) == ["final"] and steps[0].text == "42"
    # A CodeAgent traces only the tool span: it alone is the final, unwrapped.
    steps = map_spans([tool, root], TraceState())
    assert _kinds(steps) == ["final"] and steps[0].text == "42" and steps[0].args == {"answer": "42"}


def test_the_last_plain_answer_is_the_final_even_across_batches():
    state = TraceState()
    first = map_spans([oi_llm(1, inputs=[{"role": "user", "content": "q"}], content="It is 6.")], state)
    assert _kinds(first) == ["thought"]
    root = span(3, {"openinference.span.kind": "AGENT", "output.value": "It is 6."}, parent="", start=0,
                dur_ms=1000)
    assert map_spans([root], state) == []  # the root's equal output is not stored twice
    assert state.promote == [0] and state.final_answer == "It is 6."


def test_an_openai_agents_generation_with_only_the_response_object():
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "m", "output.value": json.dumps(RESPONSE)}
    tool = span(2, {"openinference.span.kind": "TOOL", "tool.name": "calculate", "input.value": '{"expression": "2*3"}',
                    "output.value": "6"})
    steps = map_spans([span(1, attrs), tool], TraceState())
    assert _kinds(steps) == ["thought", "action", "observation"]
    assert steps[0].text == "Multiply." and steps[1].meta["tool_call_id"] == "call_9"


def test_genai_tool_call_and_execute_tool_are_one_action_and_error_responses_are_errors():
    def chat(n, inputs, outputs):
        return span(n, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                        "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)})

    user = {"role": "user", "parts": [{"type": "text", "content": "q"}]}
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "X", "name": "calc", "arguments": {"e": "1"}}]}
    failed = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "X",
                                         "response": "Error: RuntimeError: calculator backend unavailable"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "Down."}], "finish_reason": "stop"}
    tool = span(2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc", "gen_ai.tool.call.id": "X"})
    root = span(9, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}, parent="", start=0,
                dur_ms=10_000)
    steps = map_spans([chat(1, [user], [call]), tool, chat(3, [user, call, failed], [answer]), root], TraceState())
    assert _kinds(steps) == ["action", "observation", "final"]
    assert steps[1].meta["status"] == "error" and "unavailable" in steps[1].text
