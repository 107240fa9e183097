"""The evaluation page: figures per strategy with intervals, errors apart, per-task cells linking to runs."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.core.models import Run
from runs.evaluations.models import Evaluation, EvaluationRun
from runs.evaluations.selectors import evaluation_report
from runs.evaluations.services import EvaluationError, evaluation_runs_measure
from tracing.core.steps import Step
from tracing.store.recorder import Recorder


def runs_of(evaluation, strategy, task):
    return [e.run for e in EvaluationRun.objects.filter(evaluation=evaluation, strategy=strategy, run__task=task)
            .select_related("run").order_by("rerun")]


@pytest.fixture
def ended(make_evaluation, tasks, end):
    """one_retrieval: task 1 right twice, task 2 wrong twice (one by the step budget).
    react_off: task 1 right once and one model error, task 2 right twice."""
    evaluation = make_evaluation()
    t1, t2 = tasks
    a, b = runs_of(evaluation, "one_retrieval", t1)
    end(a, success=True, steps=3, seconds=1)
    end(b, success=True, steps=3, seconds=1)
    a, b = runs_of(evaluation, "one_retrieval", t2)
    end(a, success=False, steps=3, seconds=1)
    end(b, success=False, steps=8, seconds=1, stopped_by="max_steps")
    a, b = runs_of(evaluation, "react_off", t1)
    end(a, success=True, steps=7, seconds=3)
    end(b, status="error", steps=2)
    for run in runs_of(evaluation, "react_off", t2):
        end(run, success=True, steps=9, seconds=4)
    return evaluation


def test_figures_per_strategy_leave_error_runs_out(ended):
    report = evaluation_report(ended)
    base, react = report.strategies
    assert (base.strategy, react.strategy) == ("one_retrieval", "react_off")
    assert (base.success.count, base.success.n, base.success.value) == (2, 4, 0.5)
    assert base.success.low < 0.5 < base.success.high
    assert (base.timeouts.count, base.timeouts.n) == (1, 4)
    assert base.steps.value == pytest.approx(17 / 4) and base.steps.p95 == 8
    # The error run is reported apart, never a failure of the strategy.
    assert (react.errors, react.ended, react.success.count, react.success.n) == (1, 3, 3, 3)
    assert report.errors == 1 and report.live == 0
    # pass@k over tasks with all k reruns scored: task 1 lost a rerun to the error.
    assert (react.pass_at.value, react.pass_at.n) == (1.0, 1)
    assert (base.pass_at.value, base.pass_hat.value, base.pass_at.n) == (0.5, 0.5, 2)


def test_cost_per_strategy_and_the_cost_budget_as_a_timeout(auth_client, make_evaluation, end, tasks):
    """A priced model: cost per run at the price table's prices; a run the cost budget ended is a timeout."""
    from runs.core.prices import price_of

    evaluation = make_evaluation(strategies=["no_tools", "react_off"], reruns=1, provider="openai",
                                 model_name="gpt-4o-mini", max_cost=Decimal("0.01"))
    for task in tasks:
        (base,), (react,) = runs_of(evaluation, "no_tools", task), runs_of(evaluation, "react_off", task)
        end(base, success=False, tokens=1000)
        end(react, success=False, tokens=40_000, stopped_by="cost_budget")
    report = evaluation_report(evaluation)
    base, react = report.strategies
    per_token = price_of("openai", "gpt-4o-mini").cost(1, 0)
    assert base.cost.value == pytest.approx(1000 * per_token) and react.cost.value == pytest.approx(40_000 * per_token)
    assert (base.timeouts.count, react.timeouts.count, react.timeouts.n) == (0, 2, 2)
    body = auth_client.get(evaluation.get_absolute_url()).content.decode()
    assert "cost<br>mean" in body and "$0.006" in body  # 40,000 tokens of gpt-4o-mini at $0.15 per million


def test_a_free_model_costs_nothing(ended):
    assert [s.cost.value for s in evaluation_report(ended).strategies] == [0.0, 0.0]


def test_per_task_cells_say_which_strategies_solved_it(ended):
    report = evaluation_report(ended)
    cells = {t.slug: [(c.solved, c.scored, c.errors, c.state) for c in t.cells] for t in report.tasks}
    assert cells == {"task-1": [(2, 2, 0, "all"), (1, 1, 1, "all")], "task-2": [(0, 2, 0, "zero"), (2, 2, 0, "all")]}


def test_the_page_shows_the_figures_and_every_cell_links_to_its_runs(auth_client, ended, django_assert_num_queries):
    url = reverse("evaluations:detail", args=[ended.pk])
    # session, user, the user's membership (the current project), the evaluation (with its policy), the
    # report's one query over its runs
    with django_assert_num_queries(5):
        response = auth_client.get(url)
    body = response.content.decode()
    assert response.status_code == 200
    assert "50.0%" in body and "[" in body  # a rate with its interval
    assert "1 run ended in error" in body
    runs = reverse("runs:list")
    assert f'href="{runs}?evaluation={ended.pk}&amp;strategy=react_off&amp;task=task-1"' in body
    assert f"{runs}?evaluation={ended.pk}&amp;strategy=react_off&amp;status=error" in body
    # Before runs carry an attribution the breakdown says so; after, this evaluation has none to show.
    assert "Runs carry no error attribution yet" in body or "No attributed failure among the ended runs" in body


def test_a_quantity_that_cannot_be_negative_never_gets_a_negative_bound(auth_client, make_evaluation, end, tasks):
    """Two quick runs and one slow one: the plain t interval of their duration
    reaches below zero (issue 30, item 10); the page clips it and names the method."""
    evaluation = make_evaluation(strategies=("one_retrieval",), reruns=3)
    for run, seconds in zip(runs_of(evaluation, "one_retrieval", tasks[0]), (0.01, 0.02, 1.6), strict=True):
        end(run, success=True, steps=1, seconds=seconds, tokens=1)
    for run in runs_of(evaluation, "one_retrieval", tasks[1]):
        end(run, success=True, steps=1, seconds=0.02, tokens=1)
    strategy = evaluation_report(evaluation).strategies[0]
    for figure in (strategy.latency, strategy.steps, strategy.tokens, strategy.cost):
        assert figure.low is not None and figure.low >= 0.0, figure
    assert strategy.latency.low == 0.0  # clipped: unclipped it is below zero
    body = auth_client.get(reverse("evaluations:detail", args=[evaluation.pk])).content.decode()
    assert "[-" not in body and "–-" not in body
    assert "Student's t for means, clipped at 0" in body.replace("&#x27;", "'")


HAS_ATTRIBUTION = any(f.name == "attribution" for f in Run._meta.get_fields())


@pytest.mark.skipif(not HAS_ATTRIBUTION, reason="runs carry no attribution on this branch")
def test_failures_are_broken_down_by_layer_when_runs_carry_an_attribution(auth_client, ended, tasks):
    wrong = runs_of(ended, "one_retrieval", tasks[1])
    Run.objects.filter(pk=wrong[0].pk).update(attribution={"layer": "observation", "step": 1})
    Run.objects.filter(pk=wrong[1].pk).update(attribution={"layer": "termination", "step": 4})
    report = evaluation_report(ended)
    assert report.layers == ["observation", "termination"]
    assert report.strategies[0].layers == {"observation": 1, "termination": 1}
    assert report.strategies[1].layers == {}
    assert "termination" in auth_client.get(ended.get_absolute_url()).content.decode()


def test_the_linked_run_list_shows_exactly_those_runs(auth_client, ended):
    response = auth_client.get(reverse("runs:list"), {"evaluation": ended.pk, "strategy": "react_off",
                                                      "task": "task-1"})
    assert response.status_code == 200
    expected = {r.pk for r in runs_of(ended, "react_off", ended.tasks.get(slug="task-1"))}
    shown = {r.pk for r in response.context["runs"]}
    assert shown == expected and len(shown) == 2


def test_the_page_polls_while_runs_are_live_and_stops_after(auth_client, make_evaluation, end):
    evaluation = make_evaluation(strategies=["no_tools"], reruns=1)
    url = reverse("evaluations:detail", args=[evaluation.pk])
    page = auth_client.get(url).content.decode()
    assert 'hx-trigger="every 2s"' in page and "2 of 2 runs still queued or running" in page
    for entry in evaluation.entries.select_related("run"):
        end(entry.run, success=False)
    poll = auth_client.get(url, HTTP_HX_REQUEST="true")
    assert poll.status_code == 286 and "every 2s" not in poll.content.decode()


def test_anonymous_is_sent_to_log_in(client, ended):
    for url in (reverse("evaluations:detail", args=[ended.pk]), reverse("evaluations:list"),
                reverse("evaluations:new")):
        assert client.get(url).status_code == 302


def test_another_project_gets_a_404_and_an_unknown_one_is_404(client, auth_client, other_user, ended):
    assert auth_client.get(reverse("evaluations:detail", args=[ended.pk + 1000])).status_code == 404
    assert ended.get_absolute_url() in auth_client.get(reverse("evaluations:list")).content.decode()
    client.force_login(other_user)  # bob: a project of his own, not alice's
    assert client.get(ended.get_absolute_url()).status_code == 404
    assert ended.get_absolute_url() not in client.get(reverse("evaluations:list")).content.decode()


def test_untrusted_text_is_escaped(auth_client, make_evaluation):
    evaluation = make_evaluation(name="<script>alert(1)</script>")
    body = auth_client.get(evaluation.get_absolute_url()).content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body


def test_an_ended_run_is_measured_from_its_steps(make_evaluation, end):
    evaluation = make_evaluation(strategies=["react_off"], reruns=1)
    run = evaluation.entries.first().run
    record = Recorder(run.pk)
    record(Step(index=0, kind="action", text="search(...)", tool="search", args={"query": "q"}))
    record(Step(index=1, kind="observation", text="Search timed out.", tool="search", meta={"status": "timeout"}))
    record(Step(index=2, kind="action", text="fetch(...)", tool="fetch", args={"url": "x"}))
    record(Step(index=3, kind="observation", text="Unknown tool 'fetch'. Available tools: search.", tool="fetch",
                meta={"status": "error"}))
    record(Step(index=4, kind="error", text="???", meta={"source": "parse", "reason": "no action"}))
    record(Step(index=5, kind="action", text="search(...)", tool="search", args={"query": "q"}))
    record(Step(index=6, kind="observation", text="The bridge is 1284 metres long.", tool="search",
                meta={"status": "ok"}))
    record(Step(index=7, kind="final", text="1284 metres"))
    end(run, success=True, answer="1284 metres")
    assert evaluation_runs_measure([run.pk]) == 1
    entry = EvaluationRun.objects.get(run=run)
    assert (entry.measured, entry.actions, entry.invalid_actions, entry.tool_errors, entry.coverage) == (
        True, 4, 2, 1, 1.0)
    report = evaluation_report(evaluation)
    [react] = report.strategies
    assert (react.invalid.count, react.invalid.n) == (2, 6)
    assert (react.recovery.count, react.recovery.n) == (1, 1)
    assert react.coverage.value == 1.0


def test_the_run_end_hook_measures_evaluation_runs(make_evaluation, end):
    from runs.lifecycle import on_run_ended

    evaluation = make_evaluation(strategies=["no_tools"], reruns=1)
    run = evaluation.entries.first().run
    end(run, success=False, answer="I could not find the answer.")
    on_run_ended(run_id=run.pk)
    entry = EvaluationRun.objects.get(run=run)
    assert entry.measured and entry.coverage is None


def test_the_command_queues_an_evaluation(tasks, queued, capsys, project):
    call_command("evaluate", "--tasks", "task-1,task-2", "--model", "sim", "--strategies", "no_tools,one_retrieval",
                 "--reruns", "3")
    assert len(queued) == 2 * 2 * 3
    assert "12 runs queued" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--tasks", "nope"], "no task or suite named nope"),
    (["--tasks", ",", "--strategies", "no_tools"], "at least one task"),
    (["--tasks", "task-1", "--strategies", "guess"], "unknown strategy guess"),
    (["--tasks", "task-1", "--max-steps", "0", "--strategies", "no_tools"], "max_steps must be at least 1"),
    (["--tasks", "task-1", "--reruns", "0", "--strategies", "no_tools"], "reruns must be at least 1"),
    (["--tasks", "task-1", "--max-cost", "0", "--strategies", "no_tools"], "--max-cost must be at least 0.0001"),
    (["--tasks", "task-1", "--max-cost", "-2", "--strategies", "no_tools"], "--max-cost must be at least 0.0001"),
    (["--tasks", "task-1", "--max-cost", "lots", "--strategies", "no_tools"], "--max-cost must be a number"),
    (["--tasks", "task-1", "--max-cost", "nan", "--strategies", "no_tools"], "--max-cost must be at least"),
])
def test_the_command_refuses_bad_input_and_writes_nothing(tasks, queued, args, message, project):
    with pytest.raises(CommandError, match=message):
        call_command("evaluate", *args)
    assert Run.objects.count() == 0 and not queued


def test_the_command_takes_a_cost_budget_for_every_run(tasks, queued, project):
    call_command("evaluate", "--tasks", "task-1", "--model", "gpt-4o-mini", "--strategies",
                 "no_tools,fixed_workflow,react_off", "--reruns", "2", "--max-cost", "0.05")
    evaluation = Evaluation.objects.get()
    assert evaluation.max_cost == Decimal("0.05")
    assert list(Run.objects.values_list("max_cost", flat=True).distinct()) == [Decimal("0.05")] and len(queued) == 6


@pytest.mark.parametrize("cost", [Decimal("0"), Decimal("-0.5"), Decimal("NaN"), float("nan")])
def test_the_service_refuses_a_cost_budget_that_is_not_above_zero(make_evaluation, cost):
    with pytest.raises(EvaluationError, match="max_cost must be more than 0"):
        make_evaluation(max_cost=cost)
    assert Run.objects.count() == 0


def test_the_list_counts_runs_and_tasks_in_one_query(auth_client, ended, make_evaluation, django_assert_num_queries):
    make_evaluation(strategies=["no_tools"], reruns=1)
    # session, user, the user's membership (the current project), the evaluations with their counts
    with django_assert_num_queries(4):
        response = auth_client.get(reverse("evaluations:list"))
    rows = {e.pk: (e.run_count, e.task_count) for e in response.context["evaluations"]}
    assert rows[ended.pk] == (2 * 2 * 2, 2)
