"""Prices per model, cost per step / run / group, and the cost budget."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.agent.loop import AgentConfig, Budget, Price, run_agent
from runs.agent.sim_server import sim_client
from runs.agent.suite import get_task, load_documents
from runs.agent.tools import CorpusSearch, default_tools
from runs.core.models import Run
from runs.core.prices import ModelPrice, PriceTable, money

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("provider", "model", "expected"), [
    ("openai", "gpt-4o", (2.5, 10.0)),
    ("openai", "gpt-4o-mini-2024-07-18", (0.15, 0.6)),  # the longest prefix wins
    ("openai", "GPT-4.1-nano", (0.1, 0.4)),
    ("openai", "o3-mini", (1.1, 4.4)),
    ("openai", "o3-pro-whatever", (2.0, 8.0)),
    ("openai", "llama3:8b", (0.0, 0.0)),  # no row: nothing known, nothing charged
    ("sim", "gpt-4o", (0.0, 0.0)),
    ("local", "gemma-3-270m", (0.0, 0.0)),
])
def test_default_prices_match_by_prefix(provider, model, expected):
    price = PriceTable.load().price_for(provider, model)
    assert (price.prompt_per_m, price.completion_per_m) == expected


def test_money_reads_like_money():
    assert money(0) == "$0" and money(None) == "—"
    assert money(0.000166) == "$0.00017" and money(0.000045) == "$0.000045" and money(0.0091) == "$0.0091"
    assert money(0.0012) == "$0.0012" and money(12.3456) == "$12.35" and money(1234.5) == "$1,234.50"


def test_run_cost_on_the_page_and_in_the_list(auth_client, make_run):
    run = make_run(provider="openai", model_name="gpt-4o", prompt_tokens=1_000_000, completion_tokens=100_000,
                   max_cost=Decimal("5"))
    sim = make_run(provider="sim", model_name="sim", prompt_tokens=1_000_000, completion_tokens=100_000)
    page = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "$3.50" in page and "$5.00" in page  # 2.50 + 10 × 0.1; the budget beside the others
    listing = auth_client.get(reverse("runs:list")).content.decode()
    assert "$3.50" in listing and "<td class=\"num\">$0</td>" in listing
    assert Run.objects.get(pk=sim.pk).cost == 0


def test_each_model_turn_shows_its_cost_beside_its_call(auth_client, make_run):
    from tracing.core.model_calls import ModelCallRecord
    from tracing.store.call_store import CallRecorder

    run = make_run(steps=3, provider="openai", model_name="gpt-4o")  # every step: 10 prompt + 2 completion tokens
    CallRecorder(run.pk)(ModelCallRecord(step_index=0, api="chat", messages=[{"role": "user", "content": "q"}]))
    page = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    # 10 × 2.50 + 2 × 10 dollars per million tokens
    assert "model call · $0.000045" in page
    assert page.count('class="model-call"') == 1  # only the step with a recorded call


def test_the_dashboard_prices_each_model_apart(auth_client, make_run, task):
    make_run(provider="openai", model_name="gpt-4o", prompt_tokens=1_000_000, completion_tokens=0)
    make_run(provider="openai", model_name="gpt-4o-mini", prompt_tokens=1_000_000, completion_tokens=0)
    make_run(provider="sim", model_name="sim", prompt_tokens=1_000_000, completion_tokens=0, task=None)
    today = timezone.now().date()
    response = auth_client.get(reverse("dashboard"), {"since": today - timedelta(days=1), "until": today})
    ctx = response.context
    assert ctx["totals"]["cost"] == pytest.approx(2.65)
    assert {g["key"]: round(g["cost"], 4) for g in ctx["by_model"]} == {"gpt-4o": 2.5, "gpt-4o-mini": 0.15, "sim": 0}
    assert {g["key"]: round(g["cost"], 4) for g in ctx["by_task"]} == {task.slug: 2.65, "free prompt": 0}
    assert "$2.65" in response.content.decode()
    csv = auth_client.get(reverse("dashboard"), {"since": today - timedelta(days=1), "until": today,
                                                 "export": "by_model"}).content.decode()
    assert "cost_usd" in csv and "2.5" in csv


def _prices_post(rows: list[tuple[str, str, str, bool]], existing: list[ModelPrice]) -> dict:
    data = {"form-TOTAL_FORMS": str(len(rows)), "form-INITIAL_FORMS": str(len(existing)),
            "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "1000"}
    for i, (prefix, prompt, completion, delete) in enumerate(rows):
        if i < len(existing):
            data[f"form-{i}-id"] = str(existing[i].pk)
        data[f"form-{i}-prefix"], data[f"form-{i}-prompt_per_m"] = prefix, prompt
        data[f"form-{i}-completion_per_m"] = completion
        if delete:
            data[f"form-{i}-DELETE"] = "on"
    return data


def test_prices_are_edited_added_and_deleted_in_one_form(auth_client):
    page = auth_client.get(reverse("prices"))
    assert page.status_code == 200 and "gpt-4o-mini" in page.content.decode()
    existing = list(ModelPrice.objects.all())
    rows = [(p.prefix, str(p.prompt_per_m), str(p.completion_per_m), False) for p in existing]
    rows[0] = (existing[0].prefix, "9", "19", False)
    rows[1] = (existing[1].prefix, "1", "1", True)
    rows.append(("my-vllm-model", "0.2", "0.4", False))
    response = auth_client.post(reverse("prices"), _prices_post(rows, existing))
    assert response.status_code == 302
    assert ModelPrice.objects.get(pk=existing[0].pk).prompt_per_m == Decimal("9")
    assert not ModelPrice.objects.filter(pk=existing[1].pk).exists()
    assert PriceTable.load().price_for("openai", "my-vllm-model-awq") == Price(0.2, 0.4)


@pytest.mark.parametrize(("prompt", "completion", "error"), [
    ("-1", "2", "greater than or equal to 0"),
    ("abc", "2", "Enter a number"),
    ("1", "", "This field is required"),
    ("1e400", "1", "digits"),
    ("NaN", "1", "Enter a number"),
])
def test_bad_prices_are_form_errors_and_nothing_is_saved(auth_client, prompt, completion, error):
    existing = list(ModelPrice.objects.all())
    before = list(ModelPrice.objects.values_list("prefix", "prompt_per_m", "completion_per_m"))
    rows = [(p.prefix, str(p.prompt_per_m), str(p.completion_per_m), False) for p in existing]
    rows[0] = (existing[0].prefix, "7", "7", False)  # a good edit beside the bad one is not saved either
    rows.append(("<script>alert(1)</script>", prompt, completion, False))
    response = auth_client.post(reverse("prices"), _prices_post(rows, existing))
    body = response.content.decode()
    assert response.status_code == 400 and error in body
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
    assert list(ModelPrice.objects.values_list("prefix", "prompt_per_m", "completion_per_m")) == before


def test_a_duplicate_prefix_is_a_form_error(auth_client):
    existing = list(ModelPrice.objects.all())
    rows = [(p.prefix, str(p.prompt_per_m), str(p.completion_per_m), False) for p in existing]
    rows.append((existing[0].prefix, "1", "1", False))
    response = auth_client.post(reverse("prices"), _prices_post(rows, existing))
    assert response.status_code == 400 and "already exists" in response.content.decode()


def test_new_run_form_refuses_a_bad_cost_budget(auth_client, task):
    for value, error in (("-1", "greater than or equal to 0.0001"), ("lots", "Enter a number")):
        response = auth_client.post(reverse("runs:new"), {
            "task": task.slug, "provider": "sim", "mode": "tools", "temperature": "0.5", "max_steps": "5",
            "max_tokens": "1000", "reruns": "1", "max_cost": value})
        assert response.status_code in (200, 400) and error in response.content.decode()
    assert not Run.objects.exists()


# --- the cost budget in the loop ---


def _loop(max_cost, price):
    steps = []
    outcome = run_agent(
        client=sim_client(rephrase=1.0, ignore_hint=1.0, early_finish=0, forget=0, wrong_premise=0),
        config=AgentConfig(mode="tools", model="sim", seed=5, price=price,
                           budget=Budget(max_steps=30, max_tokens=10_000_000, max_cost=max_cost)),
        prompt=get_task("tollby-playhouse-seats")["prompt"], tools=default_tools(CorpusSearch(load_documents())),
        sink=steps.append)
    return outcome, steps


def test_the_loop_ends_a_run_that_spends_its_cost_budget():
    outcome, steps = _loop(0.01, Price(prompt_per_m=10.0, completion_per_m=30.0))
    assert outcome.stopped_by == "cost_budget" and outcome.status == "failed"
    assert "cost budget exhausted" in outcome.reason and "(max 0.01)" in outcome.reason
    last = steps[-1]
    assert last.kind == "intervention" and last.meta["detector"] == "budget"
    assert last.meta["evidence"]["limit"] == "cost_budget" and last.meta["evidence"]["cost"] >= 0.01
    spent = sum(Price(10.0, 30.0).cost(s.prompt_tokens, s.completion_tokens) for s in steps)
    assert spent >= 0.01


def test_a_free_model_never_hits_a_cost_budget():
    outcome, _ = _loop(0.0001, Price())
    assert outcome.stopped_by != "cost_budget"


def test_runagent_takes_a_cost_budget(monkeypatch, task, project):
    from django.core.management import CommandError, call_command

    sent = []
    monkeypatch.setattr("runs.launch.services.run_enqueue", lambda run, undo=None: sent.append(run))
    call_command("runagent", "--task", task.slug, "--model", "gpt-4o", "--max-cost", "0.25", "--policy", "off")
    assert Run.objects.get().max_cost == Decimal("0.25") and sent
    with pytest.raises(CommandError, match="--max-cost"):
        call_command("runagent", "--task", task.slug, "--max-cost", "-1", "--policy", "off")
