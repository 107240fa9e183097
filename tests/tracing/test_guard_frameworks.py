"""The framework guards (tracing/adapters/) with the real frameworks against a
scripted model and a live agentlab: a loop is stopped where the built-in
watchdog stops the same trajectory, a hint reaches the model's next prompt, and
shadow mode changes nothing."""

from __future__ import annotations

import json
import warnings

import pytest

from runs.core.models import Run
from tests.projects import project_of
from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw
from tracing.client import Client, StopRun
from tracing.core.analysis import REPLAYED_KEY
from tracing.core.replay import replay
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

pytestmark = pytest.mark.django_db(transaction=True)
NOTE = "[watchdog]"


@pytest.fixture
def client_(live_server, user):
    return Client(live_server.url, token_create(user=user, project_id=project_of(user).pk, name="guard")[1],
                  retries=1, backoff=0.01)


def smolagents_run(client_, script, guard):
    pytest.importorskip("smolagents")
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    from tracing.adapters.smolagents_guard import SmolagentsGuard

    @tool
    def search(query: str) -> str:
        """Search the documents.

        Args:
            query: what to look for
        """
        return fw.search(query)

    script = [("call", "final_answer", {"answer": r[1]}) if r[0] == "text" else r for r in script]
    with ScriptedModel(script) as model:
        agent = ToolCallingAgent(tools=[search], max_steps=12, step_callbacks=[SmolagentsGuard(client_, guard=guard)],
                                 model=OpenAIServerModel(model_id="scripted-model", api_base=model.url, api_key="t"))
        try:
            return agent.run(fw.TASK), model.requests
        except StopRun as stop:
            return stop, model.requests


def langgraph_run(client_, script, guard):
    pytest.importorskip("langgraph")
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from tracing.adapters.langgraph_guard import LangGraphGuard

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent's move to langchain.agents
        from langgraph.prebuilt import create_react_agent

    @tool
    def search(query: str) -> str:
        """Search the documents."""
        return fw.search(query)

    with ScriptedModel(script) as model:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = create_react_agent(ChatOpenAI(model="scripted-model", base_url=model.url, api_key="t"), [search],
                                       **LangGraphGuard(client_, guard=guard).hooks())
        try:
            state = agent.invoke({"messages": [("user", fw.TASK)]}, {"recursion_limit": 60})
            return state["messages"][-1].content, model.requests
        except StopRun as stop:
            return stop, model.requests


FRAMEWORKS = {"smolagents": smolagents_run, "langgraph": langgraph_run}


def only_run() -> Run:
    runs = list(Run.objects.filter(source="api"))
    assert len(runs) == 1
    return runs[0]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_guarded_loop_is_stopped_where_the_built_in_watchdog_stops_it(client_, framework):
    result, requests = FRAMEWORKS[framework](client_, fw.LOOP, guard=True)
    assert isinstance(result, StopRun), result
    run = only_run()
    assert (run.status, run.stopped_by) == ("stopped", "watchdog")
    # The built-in path over the same trajectory (tracing.core.replay: the loop's Watchdog) stops at the same step.
    records = [s.to_record() for s in Step.objects.filter(run=run).order_by("index")]
    assert replay(records, goal=run.goal).stopped_at == result.step
    stop = Step.objects.get(run=run, index=result.step).meta[REPLAYED_KEY]
    assert (stop["tier"], stop["sent_to_agent"]) == ("stop", True)
    # Stopped before the script ran out: fewer model calls than the loop would make.
    assert len(requests) < len(fw.LOOP)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_hint_reaches_the_models_next_prompt(client_, framework):
    _, requests = FRAMEWORKS[framework](client_, fw.LOOP, guard=True)
    run = only_run()
    hint = next(s.meta[REPLAYED_KEY] for s in Step.objects.filter(run=run).order_by("index")
                if s.meta.get(REPLAYED_KEY, {}).get("tier") == "hint")
    prompts = [json.dumps(r.get("messages", r), ensure_ascii=False) for r in requests]
    shown = [i for i, p in enumerate(prompts) if hint["message"] in p]
    assert shown, "the hint never reached the model"
    assert NOTE in prompts[shown[0]]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_shadow_mode_changes_nothing(client_, framework):
    result, requests = FRAMEWORKS[framework](client_, fw.LOOP, guard="observe")
    assert result == "I could not find it."
    assert len(requests) == len(fw.LOOP)  # every turn of the script ran
    assert not any(NOTE in json.dumps(r, ensure_ascii=False) for r in requests)
    run = only_run()
    assert (run.status, run.final_answer) == ("finished", "I could not find it.")
    marks = [s.meta[REPLAYED_KEY] for s in Step.objects.filter(run=run) if REPLAYED_KEY in s.meta]
    assert marks and all(m["shadow"] for m in marks) and "stop" in {m["tier"] for m in marks}
