"""The loop hands over every model request exactly as it went out (no Django)."""

from __future__ import annotations

import openai

from runs.agent.loop import AgentConfig, Budget, Price
from tests.runs.agent.helpers_agent import CLEAN, recording_sim_client, run_task
from tracing.core.model_calls import prompt_text


def test_tools_mode_calls_are_the_request_bodies():
    client, bodies = recording_sim_client(**CLEAN)
    calls = []
    outcome, steps = run_task("tollby-playhouse-seats", client=client, call_sink=calls.append)
    assert outcome.status == "succeeded" and len(calls) == len(bodies) >= 2
    for call, body in zip(calls, bodies, strict=True):
        assert call.api == "chat" and call.messages == body["messages"]
        assert call.params["tools"] == body["tools"] and call.params["max_tokens"] == body["max_tokens"]
        assert call.params["model"] == body["model"] and call.params["temperature"] == body["temperature"]
        assert call.response["choices"] and call.prompt_tokens > 0 and call.latency_ms > 0
    turn_starts = [s.index for s in steps if s.prompt_tokens]
    assert [c.step_index for c in calls] == turn_starts


def test_text_mode_calls_keep_the_prompt_and_stop_sequence():
    client, bodies = recording_sim_client(**CLEAN)
    calls = []
    run_task("tollby-playhouse-seats", client=client, mode="text", call_sink=calls.append)
    assert calls and all(c.api == "completions" for c in calls)
    for call, body in zip(calls, bodies, strict=True):
        assert prompt_text(call.messages) == body["prompt"] and call.params["stop"] == body["stop"]


def test_a_fitted_prompt_is_recorded_as_fitted():
    """What the model saw after context fitting, not the trace's full text."""
    client, bodies = recording_sim_client(**{**CLEAN, "rephrase": 1.0, "ignore_hint": 1.0})
    calls = []
    config_budget = Budget(max_steps=8, max_tokens=1_000_000)
    from tests.runs.agent import helpers_agent

    original = helpers_agent.AgentConfig
    helpers_agent.AgentConfig = lambda **kw: original(**kw, context_tokens=700)
    try:
        run_task("tollby-playhouse-seats", client=client, budget=config_budget, call_sink=calls.append)
    finally:
        helpers_agent.AgentConfig = original
    fitted = [c for c, b in zip(calls, bodies, strict=True) if "shortened to fit" in str(b["messages"])]
    assert fitted and all("shortened to fit" in str(c.messages) for c in fitted)


def test_a_model_that_is_down_hands_over_the_failed_request():
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0, timeout=2)
    calls = []
    outcome, steps = run_task("tollby-playhouse-seats", client=client, call_sink=calls.append)
    assert outcome.status == "error" and len(calls) == 1
    assert calls[0].error.startswith("cannot reach the model endpoint") and calls[0].response is None
    assert calls[0].messages[1]["role"] == "user" and steps[-1].kind == "error"
    assert calls[0].step_index == steps[-1].index


def test_cost_budget_counts_the_history_of_a_resumed_run():
    client, _ = recording_sim_client(**CLEAN)
    _, steps = run_task("tollby-playhouse-seats", client=client)
    spent = Price(1000.0, 1000.0).cost(sum(s.prompt_tokens for s in steps), sum(s.completion_tokens for s in steps))
    # Resume from the first two steps with a budget the history alone has spent.
    history = steps[:2]
    from runs.agent.loop import run_agent
    from runs.agent.suite import get_task, load_documents
    from runs.agent.tools import CorpusSearch, default_tools

    more = []
    outcome = run_agent(client=client, config=AgentConfig(price=Price(1000.0, 1000.0),
                                                          budget=Budget(max_cost=spent / 100)),
                        prompt=get_task("tollby-playhouse-seats")["prompt"],
                        tools=default_tools(CorpusSearch(load_documents())), sink=more.append, history=history)
    assert outcome.stopped_by == "cost_budget" and len(more) == 1
