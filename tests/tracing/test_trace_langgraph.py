"""LangGraph (prebuilt ReAct agent, langchain-openai) + OpenInference's
LangChain instrumentation + the SDK's OTLP protobuf exporter, against a
scripted model and a live agentlab."""

from __future__ import annotations

import warnings

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")
pytest.importorskip("openinference.instrumentation.langchain")

pytestmark = pytest.mark.django_db(transaction=True)


def _run(live_server, user, script):
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from openinference.instrumentation.langchain import LangChainInstrumentor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
        from langgraph.prebuilt import create_react_agent

    @tool
    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return fw.calculate(expression)

    @tool
    def search(query: str) -> str:
        """Search the documents."""
        return fw.search(query)

    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                agent = create_react_agent(ChatOpenAI(model="scripted-model", base_url=model.url, api_key="test"),
                                           [calculate, search])
            state = agent.invoke({"messages": [("user", fw.TASK)]}, {"recursion_limit": 50})
        finally:
            instrumentor.uninstrument()
    return state["messages"][-1].content


def test_normal_run_prompt_and_answer_unwrapped(live_server, user):
    assert _run(live_server, user, fw.NORMAL) == fw.ANSWER
    run = fw.only_run()
    # The root's {"messages": [["user", "…"]]} is the prompt; the message state is not the answer.
    steps = fw.assert_finished(run, answer=fw.ANSWER, actions=1)
    obs = next(s for s in steps if s.kind == "observation")
    # The serialised ToolMessage is unwrapped to its content.
    assert obs.text == "1044483" and obs.meta["status"] == "ok"
    assert obs.meta["signals"]["obs_class"] != "off_topic"


def test_loop_gets_repetition_interventions(live_server, user):
    _run(live_server, user, fw.LOOP)
    run = fw.only_run()
    fw.assert_finished(run, answer="I could not find it.", actions=fw.LOOP_TURNS)
    fw.assert_loop_interrupted(run)


def test_a_raised_tool_error_ends_the_run_as_error(live_server, user):
    # LangGraph's ToolNode re-raises a tool's exception: the graph fails.
    with pytest.raises(RuntimeError, match=fw.ERROR):
        _run(live_server, user, fw.ERRORED)
    run = fw.only_run()
    steps = fw.steps_of(run)
    assert run.status == "error" and run.prompt == fw.TASK
    assert "final" not in fw.kinds(steps)
    obs = fw.assert_error_observation(steps)
    assert fw.ERROR in obs.meta["cause"]
    assert steps[-1].kind == "error" and fw.ERROR in steps[-1].text
