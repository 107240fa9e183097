"""The baselines next to the loop: same client, same tools, steps recorded like any run (no Django)."""

from __future__ import annotations

import openai
import pytest
from helpers_agent import CLEAN

from runs.agent.loop import AgentConfig, Budget, Price
from runs.agent.sim_server import sim_client
from runs.agent.strategies import (
    FIXED_WORKFLOW,
    NO_TOOLS,
    ONE_RETRIEVAL,
    REACT_OFF,
    STRATEGIES,
    key_term,
    run_strategy,
)
from runs.agent.suite import builtin_tasks, get_task, load_documents, score
from runs.agent.tools import CorpusSearch, default_tools
from tracing.core.steps import Step


def run(strategy: str, slug: str, *, seed: int = 1, client=None, **budget):
    task = get_task(slug)
    steps = []
    outcome = run_strategy(
        strategy, client=client or sim_client(**CLEAN), config=AgentConfig(seed=seed, budget=Budget(**budget)),
        prompt=task["prompt"], tools=default_tools(CorpusSearch(load_documents())), sink=steps.append,
    )
    return task, outcome, steps


def test_no_tools_answers_from_the_question_alone_in_one_model_turn():
    task, outcome, steps = run(NO_TOOLS, "korvan-operating-income-2022")
    assert [s.kind for s in steps if s.kind in ("action", "observation")] == []
    assert steps[-1].kind == "final" and outcome.status == "succeeded"
    # The entities are fictional: nothing but a retrieval can know the figure.
    assert not score(task, outcome.final_answer)


def test_one_retrieval_searches_the_task_once_then_answers():
    task, outcome, steps = run(ONE_RETRIEVAL, "korvan-operating-income-2022")
    actions = [s for s in steps if s.kind == "action"]
    assert [(a.tool, a.args, a.meta.get("scripted")) for a in actions] == [("search", {"query": task["prompt"]}, True)]
    assert steps[1].kind == "observation" and steps[1].meta["status"] == "ok"
    assert [s.index for s in steps] == list(range(len(steps)))
    assert score(task, outcome.final_answer), outcome.final_answer


def test_one_retrieval_is_not_enough_for_a_two_hop_question():
    task, outcome, _ = run(ONE_RETRIEVAL, "salt-lantern-birthplace")
    assert outcome.final_answer and not score(task, outcome.final_answer)


def test_fixed_workflow_is_search_then_lookup_of_the_key_term():
    task, outcome, steps = run(FIXED_WORKFLOW, "lumen-bridge-length")
    actions = [(s.tool, s.args) for s in steps if s.kind == "action"]
    assert actions == [("search", {"query": task["prompt"]}), ("lookup", {"term": "Lumen Bridge"})]
    assert score(task, outcome.final_answer)


def test_the_suite_has_tasks_one_retrieval_solves_and_tasks_it_does_not():
    """Not rigged either way: on some tasks the baseline matches ReAct at a
    fraction of the steps, on others only the loop gets there."""
    suffices, needs_more = [], []
    for task in builtin_tasks():
        _, base, _ = run(ONE_RETRIEVAL, task["slug"])
        _, react, _ = run(REACT_OFF, task["slug"], max_steps=10)
        if score(task, base.final_answer):
            suffices.append(task["slug"])
        elif score(task, react.final_answer):
            needs_more.append(task["slug"])
    assert len(suffices) >= 5, suffices
    assert len(needs_more) >= 5, needs_more


def test_scripted_calls_spend_the_step_budget():
    _, outcome, steps = run(FIXED_WORKFLOW, "lumen-bridge-length", max_steps=1)
    assert outcome.stopped_by == "max_steps" and outcome.status == "failed"
    assert [s.kind for s in steps] == ["action", "observation", "intervention"]


def test_the_wall_time_budget_ends_a_run_between_turns():
    _, outcome, steps = run(REACT_OFF, "lumen-bridge-length", max_seconds=0)
    assert outcome.stopped_by == "wall_time"
    assert steps[-1].meta["evidence"]["limit"] == "wall_time"


def test_a_model_that_is_down_ends_a_baseline_in_error():
    dead = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0, timeout=2)
    _, outcome, steps = run(ONE_RETRIEVAL, "lumen-bridge-length", client=dead)
    assert outcome.status == "error"
    assert steps[-1].kind == "error" and steps[-1].meta["source"] == "model"


@pytest.mark.parametrize("mode", ["tools", "text"])
def test_the_answer_turn_offers_finish_only_and_the_sim_answers_with_what_it_has(mode):
    task = get_task("salt-lantern-birthplace")
    steps = []
    outcome = run_strategy(ONE_RETRIEVAL, client=sim_client(**CLEAN), config=AgentConfig(mode=mode, seed=3),
                           prompt=task["prompt"], tools=default_tools(CorpusSearch(load_documents())),
                           sink=steps.append)
    # One scripted search, then an answer: no call to a tool it was not offered.
    assert [s.kind for s in steps if s.kind == "action"] == ["action"]
    assert not any(s.text.startswith("Unknown tool") for s in steps)
    assert outcome.status == "succeeded" and outcome.final_answer


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown strategy"):
        run("guess", "lumen-bridge-length")
    assert set(STRATEGIES) == {"no_tools", "one_retrieval", "fixed_workflow", "react", "react_off"}


@pytest.mark.parametrize(("question", "term"), [
    ("How long is the Lumen Bridge in metres?", "Lumen Bridge"),
    ("Where was the author of The Salt Lantern born?", "The Salt Lantern"),
    ("《雾港信札》的作者出生在哪个城市？", "雾港信札"),
    ("how many seats?", "seats"),
])
def test_key_term(question, term):
    assert key_term(question) == term


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_stops_on_the_cost_budget(strategy):
    """A resumed run whose history has spent the cost budget: no strategy may
    take another turn or scripted call (the budget covers the whole run)."""
    task = get_task("lumen-bridge-length")
    spent = [Step(index=0, kind="thought", text="Let me look.", prompt_tokens=1000, completion_tokens=100)]
    steps = []
    outcome = run_strategy(
        strategy, client=sim_client(**CLEAN),
        config=AgentConfig(seed=1, price=Price(1000.0, 1000.0), budget=Budget(max_cost=1.0)),
        prompt=task["prompt"], tools=default_tools(CorpusSearch(load_documents())), sink=steps.append,
        history=spent,
    )
    assert outcome.stopped_by == "cost_budget" and outcome.status == "failed"
    assert [s.kind for s in steps] == ["intervention"]
    assert steps[0].meta["evidence"]["limit"] == "cost_budget"


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_a_cost_budget_a_free_model_never_spends_changes_nothing(strategy):
    free = run(strategy, "lumen-bridge-length", seed=4, max_steps=10)[1]
    budgeted = run(strategy, "lumen-bridge-length", seed=4, max_steps=10, max_cost=0.0001)[1]
    assert budgeted == free and budgeted.stopped_by != "cost_budget"
