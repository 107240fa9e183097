"""The openai-agents SDK (Responses API, plain and streamed) + OpenInference's
openai-agents instrumentation + the SDK's OTLP protobuf exporter, against a
scripted model and a live agentlab."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

pytest.importorskip("agents")
pytest.importorskip("openinference.instrumentation.openai_agents")

pytestmark = pytest.mark.django_db(transaction=True)

INSTRUCTIONS = "You are a careful calculator agent."


def _run(live_server, user, script, *, streamed: bool = False, requests: list | None = None):
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_trace_processors
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    @function_tool
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return fw.calculate(expression)

    @function_tool
    def search(query: str) -> str:
        """Search the documents."""
        return fw.search(query)

    async def streamed_run(agent):
        result = Runner.run_streamed(agent, fw.TASK, max_turns=20)
        async for _event in result.stream_events():
            pass
        return result.final_output

    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        set_trace_processors([])  # no export to OpenAI's own trace backend
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            agent = Agent(name="calc-agent", instructions=INSTRUCTIONS, tools=[calculate, search],
                          model=OpenAIResponsesModel(model="scripted-model",
                                                     openai_client=AsyncOpenAI(base_url=model.url, api_key="test")))
            if streamed:
                return asyncio.run(streamed_run(agent))
            return Runner.run_sync(agent, fw.TASK, max_turns=20).final_output
        finally:
            instrumentor.uninstrument()
            if requests is not None:
                requests.extend(model.requests)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_normal_run_the_plain_answer_is_the_one_final(live_server, user, streamed):
    requests: list = []
    assert _run(live_server, user, fw.NORMAL, streamed=streamed, requests=requests) == fw.ANSWER
    run = fw.only_run()
    steps = fw.assert_finished(run, answer=fw.ANSWER, actions=1)
    assert run.settings["agent"] == "calc-agent"
    # Streamed too: the tokens the model reported, on each call's first step (never 0).
    assert [(s.kind, s.prompt_tokens, s.completion_tokens) for s in steps if s.kind != "observation"] == [
        ("action", len(json.dumps(requests[0])) // 4, 7), ("final", len(json.dumps(requests[1])) // 4, 7)]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_loop_gets_repetition_interventions(live_server, user, streamed):
    _run(live_server, user, fw.LOOP, streamed=streamed)
    run = fw.only_run()
    fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
    fw.assert_loop_interrupted(run)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
def test_tool_error_is_an_error_observation(live_server, user, streamed):
    _run(live_server, user, fw.ERRORED, streamed=streamed)
    run = fw.only_run()
    steps = fw.assert_finished(run, answer="The calculator is down.", actions=1)
    # The SDK redacts the exception from the tool's output; the span's status
    # message is where the failure is named, and it is shown as the cause.
    obs = fw.assert_error_observation(steps, cause="Error running tool")
    assert obs.meta["cause"].startswith("Error running tool")
