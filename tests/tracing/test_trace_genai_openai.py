"""A plain openai tool loop + the OpenTelemetry GenAI instrumentation
(opentelemetry-instrumentation-openai-v2, latest conventions) with content as
JSON span attributes and without content (its default), + hand-made
``invoke_agent`` / ``execute_tool`` spans as the conventions describe, + the
SDK's OTLP protobuf exporter, against a scripted model and a live agentlab."""

from __future__ import annotations

import json

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

pytest.importorskip("opentelemetry.instrumentation.openai_v2")

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = "You are a careful calculator agent."
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}}}
    for name, arg in (("calculate", "expression"), ("search", "query"))]


@pytest.fixture(params=["content", "no-content"])
def content_mode(request, monkeypatch):
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    if request.param == "content":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "span_only")
    else:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    # The opt-in is read once per process.
    monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_initialized", False)
    return request.param


def _run(live_server, user, script) -> str:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.trace import SpanKind

    tools = {"calculate": lambda a: fw.calculate(a["expression"]), "search": lambda a: fw.search(a["query"])}
    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            client = openai.OpenAI(base_url=model.url, api_key="test")
            tracer = provider.get_tracer("calc-agent")
            messages: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": fw.TASK}]
            with tracer.start_as_current_span("invoke_agent calc-agent", kind=SpanKind.INTERNAL, attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc-agent"}):
                for _turn in range(20):
                    reply = client.chat.completions.create(model="scripted-model", messages=messages, tools=TOOLS)
                    message = reply.choices[0].message
                    if not message.tool_calls:
                        return message.content
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
        finally:
            instrumentor.uninstrument()
    raise AssertionError("the scripted model never answered")


def test_normal_run_one_action_per_call_and_the_answer_final(live_server, user, content_mode):
    assert _run(live_server, user, fw.NORMAL) == fw.ANSWER
    run = fw.only_run()
    assert run.settings["agent"] == "calc-agent"
    if content_mode == "no-content":
        # Nothing but names, ids, tokens: the steps say so, and no answer is invented.
        # The last call's finish reason "stop" makes it the (unseen) final answer.
        steps = fw.steps_of(run)
        assert fw.kinds(steps) == ["thought", "action", "observation", "final"]
        assert all(s.meta.get("content_captured") is False for s in steps if s.kind != "action")
        assert steps[1].tool == "calculate" and steps[0].prompt_tokens > 0
        assert run.status == "finished" and run.final_answer == ""
        return
    # The chat span's tool call and the execute_tool span with its id are one action.
    steps = fw.assert_finished(run, answer=fw.ANSWER, actions=1)
    assert run.context["system"] == SYSTEM
    obs = next(s for s in steps if s.kind == "observation")
    assert obs.text == "1044483" and obs.meta["tool_call_id"].startswith("call_")


def test_loop_gets_repetition_interventions(live_server, user, content_mode):
    _run(live_server, user, fw.LOOP)
    run = fw.only_run()
    if content_mode == "content":
        fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
    else:
        assert fw.kinds(fw.steps_of(run)).count("action") == fw.LOOP_TURNS
    fw.assert_loop_interrupted(run)


def test_a_tool_error_sent_to_the_model_is_an_error_observation(live_server, user, content_mode):
    _run(live_server, user, fw.ERRORED)
    run = fw.only_run()
    if content_mode == "no-content":
        pytest.skip("without content nothing tells the error apart")
    steps = fw.assert_finished(run, answer="The calculator is down.", actions=1)
    obs = fw.assert_error_observation(steps)
    assert obs.meta["source"] == "llm_input"
