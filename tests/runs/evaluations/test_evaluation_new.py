"""The new-evaluation form: what it creates, and the bad input it refuses whole."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.models import Policy, Run
from runs.evaluations.models import Evaluation, EvaluationRun

URL = reverse("evaluations:new")


@pytest.fixture
def policy(project):
    return Policy.objects.create(name="default", config={}, project=project)


def form(task_list, **overrides):
    data = {"tasks": [t.slug for t in task_list], "strategies": ["no_tools", "one_retrieval", "react_off"],
            "provider": "sim", "mode": "tools", "temperature": 0, "reruns": 2, "max_steps": 8,
            "max_tokens": 10000, "max_seconds": 60, "seed": 5}
    data.update(overrides)
    return data


def test_it_requires_login(client):
    assert client.get(URL).status_code == 302
    assert client.post(URL, {}).status_code == 302


def test_the_form_shows_tasks_strategies_and_the_budget(auth_client, tasks):
    body = auth_client.get(URL).content.decode()
    for text in ("task-1", "one retrieval", "fixed workflow", "watchdog off", "max wall time", "max cost ($)"):
        assert text in body


def test_it_queues_one_run_per_task_strategy_and_rerun(auth_client, tasks, queued, policy):
    response = auth_client.post(URL, form(tasks, strategies=["one_retrieval", "react", "react_off"],
                                          policy=policy.pk))
    evaluation = Evaluation.objects.get()
    assert response.status_code == 302 and response["Location"] == evaluation.get_absolute_url()
    entries = list(EvaluationRun.objects.select_related("run").order_by("run_id"))
    assert len(entries) == len(queued) == 2 * 3 * 2
    for entry in entries:
        run = entry.run
        assert run.status == Run.Status.QUEUED and run.settings["strategy"] == entry.strategy
        assert (run.max_steps, run.max_tokens, run.settings["max_seconds"]) == (8, 10000, 60)
        # Only the watched ReAct strategy runs under the policy.
        assert run.policy_id == (policy.pk if entry.strategy == "react" else None)
    # Rerun r of a task has the same seed under every strategy: paired draws.
    seeds = {(e.run.task_id, e.rerun, e.run.seed) for e in entries}
    assert len(seeds) == 2 * 2


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"tasks": []}, "tasks", "Pick at least one task."),
    ({"strategies": ["one_retrieval", "guess"]}, "strategies", "Select a valid choice"),
    ({"strategies": []}, "strategies", "Pick at least one strategy."),
    ({"max_steps": 0}, "max_steps", "greater than or equal to 1"),
    ({"max_tokens": 0}, "max_tokens", "greater than or equal to 1"),
    ({"max_seconds": 0}, "max_seconds", "greater than or equal to 1"),
    ({"reruns": 0}, "reruns", "greater than or equal to 1"),
    ({"max_cost": "0"}, "max_cost", "greater than or equal to 0.0001"),
    ({"max_cost": "-1"}, "max_cost", "greater than or equal to 0.0001"),
    ({"max_cost": "lots"}, "max_cost", "Enter a number"),
    ({"max_cost": "NaN"}, "max_cost", "Enter a number"),
    ({"strategies": ["react"]}, "policy", "needs a policy"),
])
def test_bad_input_is_a_form_error_and_writes_nothing(auth_client, tasks, queued, overrides, field, message):
    response = auth_client.post(URL, form(tasks, **overrides))
    assert response.status_code == 400
    assert message in str(response.context["form"].errors[field])
    assert Evaluation.objects.count() == 0 and Run.objects.count() == 0 and not queued


def test_the_cost_budget_reaches_every_run_of_every_strategy(auth_client, tasks, queued, policy, settings):
    from decimal import Decimal

    from runs.core.endpoints import config_for

    settings.OPENAI_BASE_URL = "http://openai.invalid/v1"
    strategies = ["no_tools", "one_retrieval", "fixed_workflow", "react", "react_off"]
    response = auth_client.post(URL, form(tasks, strategies=strategies, policy=policy.pk, max_cost="0.25",
                                          provider="openai", model_name="gpt-4o-mini"))
    assert response.status_code == 302
    evaluation = Evaluation.objects.get()
    assert evaluation.max_cost == Decimal("0.25")
    runs = list(Run.objects.filter(evaluation_entry__evaluation=evaluation))
    assert len(runs) == 2 * len(strategies) * 2
    assert {r.max_cost for r in runs} == {Decimal("0.25")}
    # What the worker hands the loop (baselines and ReAct alike): the budget, and a price to spend it at.
    config = config_for(runs[0])
    assert config.budget.max_cost == 0.25 and config.price.prompt_per_m > 0
    assert "$0.25" in auth_client.get(evaluation.get_absolute_url()).content.decode()
    assert "$0.25" in auth_client.get(reverse("evaluations:list")).content.decode()


def test_a_blank_cost_budget_is_no_cost_limit(auth_client, tasks, queued):
    assert auth_client.post(URL, form(tasks, max_cost="")).status_code == 302
    evaluation = Evaluation.objects.get()
    assert evaluation.max_cost is None and not Run.objects.exclude(max_cost=None).exists()
    assert "no cost limit" in auth_client.get(evaluation.get_absolute_url()).content.decode()


def test_redis_down_the_form_says_so_and_leaves_nothing(auth_client, tasks, monkeypatch):
    from kombu.exceptions import OperationalError

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", refuse)
    response = auth_client.post(URL, form(tasks))
    assert response.status_code == 400
    assert "Nothing was queued" in response.content.decode()
    assert Evaluation.objects.count() == 0 and Run.objects.count() == 0 and EvaluationRun.objects.count() == 0


def test_every_task_at_once(auth_client, tasks, queued):
    response = auth_client.post(URL, form(tasks, tasks=[], all_tasks="on", strategies=["no_tools"], reruns=1))
    assert response.status_code == 302
    assert Evaluation.objects.get().tasks.count() == len(tasks) and len(queued) == len(tasks)
