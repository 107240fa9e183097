from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.core.models import Run
from tests.projects import team

pytestmark = pytest.mark.django_db
URL = reverse("dashboard")


@pytest.fixture
def runs(make_run):
    make_run(step_count=4, success=True, status="finished")
    make_run(step_count=12, success=False, status="finished", stopped_by="max_steps",
             intervention_count=2, intervention_detectors=["repetition", "budget"], intervention_tiers=["hint", "stop"])
    make_run(step_count=6, success=True, status="finished", first_anchor_break=3, anchor_reason="x",
             context_steps=[0, 3, 6], context_tokens=[100, 300, 500], truncated_steps=[5])
    make_run(step_count=5, status="running")  # live: not counted


def test_it_requires_login(client):
    assert client.get(URL).status_code == 302


def test_it_shows_the_figures_of_finished_runs(auth_client, runs):
    response = auth_client.get(URL)
    assert response.status_code == 200
    t = response.context["totals"]
    assert t["runs"] == 3
    assert t["success_rate"] == pytest.approx(2 / 3)
    assert t["over_max_rate"] == pytest.approx(1 / 3)
    assert t["anchor_break_rate"] == pytest.approx(1 / 3)
    assert t["p95_steps"] == 12
    assert dict(response.context["detectors"]) == {"repetition": 1, "budget": 1}
    assert dict(response.context["tiers"]) == {"hint": 1, "stop": 1}
    assert dict(response.context["histogram"]) == {4: 1, 6: 1, 12: 1}
    assert response.context["context"] == [(0, 100.0, 1), (3, 300.0, 1), (6, 500.0, 1)]
    assert response.context["truncated"] == [(5, 1)]
    [task_row] = response.context["by_task"]
    assert task_row["k"] == 3 and task_row["pass_hat_k"] == 0.0 and task_row["pass_at_k"] == 1.0
    body = response.content.decode()
    assert "plotly.min.js" in body and 'id="fig-histogram"' in body
    # Bars link through to the runs behind them.
    assert "steps_min=12" in body and "detector=repetition" in body


def test_it_reads_summaries_only_in_a_constant_number_of_queries(auth_client, runs, make_run, django_assert_num_queries):
    for _ in range(20):
        make_run(step_count=3, success=True)
    # session, user, memberships of the user (current project, the header's switcher), from the day rollups: one
    # GROUPING SETS over their sums (every figure and the costs' tokens) and one pass over their counts (the
    # histogram, interventions, context pressure, layers, tags); reviewers' labels per detector, reviewers' layers,
    # the price table, task choices
    with django_assert_num_queries(9):
        auth_client.get(URL)
    # From the runs (a filter the rollups do not keep): one GROUPING SETS scan for every figure, one scan of the
    # arrays, failures by guessed layer, tokens per model for the costs and runs per tag besides.
    with django_assert_num_queries(12):
        auth_client.get(URL, {"tag": "x"})


def test_filters_narrow_the_figures(auth_client, runs, make_run):
    make_run(step_count=3, success=True, model_name="other")
    response = auth_client.get(URL, {"model": "other"})
    assert response.context["totals"]["runs"] == 1


def test_an_empty_period_is_an_empty_state(auth_client, runs):
    long_ago = (timezone.now() - timedelta(days=900)).date()
    response = auth_client.get(URL, {"since": long_ago, "until": long_ago + timedelta(days=1)})
    assert response.status_code == 200
    assert "No finished runs" in response.content.decode()


def test_bad_dates_get_a_message_naming_the_field(auth_client, runs):
    response = auth_client.get(URL, {"since": "2026-12-31", "until": "2026-01-01"})
    assert response.status_code == 400
    assert "since must be on or before until" in response.content.decode()
    response = auth_client.get(URL, {"since": "soon"})
    assert response.status_code == 400


def test_every_chart_exports_csv(auth_client, runs):
    response = auth_client.get(URL, {"export": "histogram"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["steps", "runs"] and ["12", "1"] in rows
    for name in ("detectors", "tiers", "over_time", "context", "false_kills", "by_task", "by_model", "by_policy"):
        assert auth_client.get(URL, {"export": name}).status_code == 200
    assert auth_client.get(URL, {"export": "nope"}).status_code == 400


def test_run_list_filters_the_dashboard_links_to(auth_client, runs):
    response = auth_client.get(reverse("runs:list"), {"steps_min": 10, "stopped_by": "max_steps"})
    assert [r.step_count for r in response.context["runs"]] == [12]
    response = auth_client.get(reverse("runs:list"), {"steps_max": 5, "outcome": "correct"})
    assert [r.step_count for r in response.context["runs"]] == [4]
    assert Run.objects.count() == 4


def test_false_kill_rate_comes_from_reviewers_labels(auth_client, runs):
    from runs.reviews.models import ReviewItem

    run = Run.objects.filter(intervention_count__gt=0).first()
    ReviewItem.objects.create(run=run, step_index=3, detector="repetition", tier="stop", label="wrongly_killed")
    ReviewItem.objects.create(run=run, step_index=7, detector="repetition", tier="stop", label="justified")
    ReviewItem.objects.create(run=run, step_index=9, detector="budget", tier="stop", label="justified")
    response = auth_client.get(URL)
    assert response.context["totals"]["false_kill_rate"] == pytest.approx(1 / 3)
    rows = {r["detector"]: r for r in response.context["false_kills"]}
    assert rows["repetition"]["false_kill_rate"] == 0.5 and rows["budget"]["false_kill_rate"] == 0.0


def test_the_watchdog_off_drill_keeps_its_filter(auth_client, make_run):
    from runs.core.models import Policy

    policy = Policy.objects.create(project=team(), name="default", config={})
    make_run(status="finished", success=False, policy=policy)
    unwatched = make_run(status="finished", success=False)
    # Filtered to runs without a watchdog, every link to the run list keeps it...
    page = auth_client.get(URL, {"policy": "off"})
    assert page.context["totals"]["runs"] == 1
    assert "policy=off" in page.context["run_list_url"]
    assert all("policy=off" in url for url in page.context["charts"]["histogram"]["data"][0]["customdata"])
    # ...and the "by policy" row of runs without a watchdog links to them.
    everything = auth_client.get(URL)
    off_row = next(g for g in everything.context["by_policy"] if g["key"] == "off (no watchdog)")
    assert off_row["drill"] == "off"
    listed = auth_client.get(reverse("runs:list"), {"policy": "off"})
    assert [r.pk for r in listed.context["runs"]] == [unwatched.pk]


def test_a_model_name_that_is_a_formula_is_exported_as_text(auth_client, make_run):
    make_run(step_count=3, success=True, status="finished", model_name='=HYPERLINK("http://evil.example","x")')
    make_run(step_count=3, success=True, status="finished", model_name="@SUM(A1)")
    body = auth_client.get(URL, {"export": "by_model"}).content.decode()
    models = [row["group"] for row in csv.DictReader(io.StringIO(body))]
    assert "'=HYPERLINK(\"http://evil.example\",\"x\")" in models and "'@SUM(A1)" in models
    assert not any(m.startswith(("=", "@", "+", "-")) for m in models)


def test_only_text_that_starts_a_formula_is_quoted():
    from runs.core.csv_cells import safe_cell

    assert safe_cell("-2+3") == "'-2+3" and safe_cell(-2) == -2 and safe_cell("gpt-4") == "gpt-4"


def test_forks_are_not_runs_of_the_dashboard(auth_client, make_run):
    """A fork (a reviewer's "what if it had gone on", watchdog off) is not
    another run of the task: it counts nowhere, and no policy is named "—"."""
    from runs.core.models import Policy

    policy = Policy.objects.create(project=team(), name="default", config={})
    parent = make_run(status="stopped", policy=policy, success=False)
    make_run(status="finished", parent=parent, fork_from=2, success=True)
    page = auth_client.get(URL)
    assert page.context["totals"]["runs"] == 1
    assert [g["key"] for g in page.context["by_policy"]] == ["default"]
    assert "—" not in [g["key"] for g in page.context["by_policy"] + page.context["by_task"]]
    # Its links to the run list leave the forks out too, so the counts agree.
    assert "forks=no" in page.context["run_list_url"]
    listed = auth_client.get(page.context["run_list_url"])
    assert [r.pk for r in listed.context["runs"]] == [parent.pk]


def test_the_per_day_axis_is_a_date_axis_over_the_period(auth_client, runs):
    fig = auth_client.get(URL, {"since": "2026-01-01", "until": "2026-01-05"}).context["charts"]["over_time"]
    axis = fig["layout"]["xaxis"]
    assert axis["type"] == "date" and axis["tickformat"] == "%b %-d" and axis["dtick"] == 86_400_000
    assert axis["range"] == ["2025-12-31 12:00", "2026-01-05 12:00"]


def test_only_charts_with_links_tell_the_reader_to_click(auth_client, runs):
    charts = auth_client.get(URL).context["charts"]
    assert "hint" not in charts["context"]  # a line of means: nothing to click
    assert charts["histogram"]["hint"] == "click a bar for its runs"
    assert "bar" not in charts["over_time"]["hint"]


def test_it_filters_and_groups_by_tag(auth_client, runs, make_run):
    for i in range(4):
        make_run(step_count=3, success=i % 2 == 0, tags=["exp-a", "<b>t</b>"] if i < 3 else ["exp-b"])
    response = auth_client.get(URL, {"tag": "exp-a"})
    assert response.context["totals"]["runs"] == 3
    groups = {g["key"]: g["runs"] for g in auth_client.get(URL).context["by_tag"]}
    assert groups == {"exp-a": 3, "<b>t</b>": 3, "exp-b": 1}
    body = auth_client.get(URL).content.decode()
    assert "&lt;b&gt;t&lt;/b&gt;" in body and "<b>t</b>" not in body
    csv_body = auth_client.get(URL, {"export": "by_tag"}).content.decode()
    assert any(line.startswith("exp-a,3,3,2,") for line in csv_body.splitlines())
    assert auth_client.get(URL, {"meta": "novalue"}).status_code == 400
