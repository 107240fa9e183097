"""smolagents + OpenInference's smolagents instrumentation + the SDK's OTLP
protobuf exporter, against a scripted model and a live agentlab."""

from __future__ import annotations

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

pytest.importorskip("smolagents")
pytest.importorskip("openinference.instrumentation.smolagents")

pytestmark = pytest.mark.django_db(transaction=True)


def _run(live_server, user, script, *, final_tool: bool = True):
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    @tool
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: the expression, e.g. 2 * 3
        """
        return fw.calculate(expression)

    @tool
    def search(query: str) -> str:
        """Search the documents.

        Args:
            query: what to look for
        """
        return fw.search(query)

    # smolagents ends a run by calling its final_answer tool, never with plain text.
    script = [("call", "final_answer", {"answer": r[1]}) if r[0] == "text" and final_tool else r for r in script]
    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        instrumentor = SmolagentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            agent = ToolCallingAgent(
                tools=[calculate, search], max_steps=12,
                model=OpenAIServerModel(model_id="scripted-model", api_base=model.url, api_key="test"),
            )
            result = agent.run(fw.TASK)
        finally:
            instrumentor.uninstrument()
    return result


def test_normal_run_one_final_from_the_final_answer_tool(live_server, user):
    assert _run(live_server, user, fw.NORMAL) == fw.ANSWER
    run = fw.only_run()
    steps = fw.assert_finished(run, answer=fw.ANSWER, actions=1)
    # The model's final_answer call and the final_answer TOOL span are one answer, not JSON.
    assert steps[-1].tool == "final_answer" and steps[-1].args == {"answer": fw.ANSWER}
    assert steps[0].prompt_tokens > 0
    assert (run.settings or {}).get("agent") == "ToolCallingAgent.run" or (run.settings or {}).get("agent")


def test_loop_gets_repetition_interventions(live_server, user):
    _run(live_server, user, fw.LOOP)
    run = fw.only_run()
    fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
    fw.assert_loop_interrupted(run)


def test_tool_error_is_an_error_observation(live_server, user):
    _run(live_server, user, fw.ERRORED)
    run = fw.only_run()
    steps = fw.assert_finished(run, answer="The calculator is down.", actions=1)
    fw.assert_error_observation(steps)
