from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.core.models import Policy, Run
from runs.policies.services import builtin_policies_load
from runs.reviews.models import ReviewItem
from runs.whatif import sweep as whatif
from runs.whatif.models import WhatIfJob
from runs.whatif.services import whatif_create
from runs.whatif.sweep_job import whatif_execute
from tests.eval_data import eval_runs
from tests.projects import project_of, team
from tracing.core.steps import Step
from tracing.core.watchdog import DEFAULT_POLICY, PolicyError


def _loop_run(n: int = 30) -> list[Step]:
    steps = []
    for i in range(n):
        kind = "action" if i % 2 == 0 else "observation"
        steps.append(Step(index=i, kind=kind, tool="search", args={"q": "same thing"} if kind == "action" else None,
                          text="No results." if kind == "observation" else ""))
    return steps


def test_sweep_builds_one_policy_per_value_and_names_bad_fields():
    config = DEFAULT_POLICY.to_dict()
    policies = whatif.sweep_policies(config, "ladder.stop_streak", [4, 8])
    assert [p.ladder.stop_streak for p in policies] == [4, 8]
    with pytest.raises(PolicyError, match="thresholds.novelty_min"):
        whatif.sweep_policies(config, "thresholds.novelty_min", [0.1, 7])
    with pytest.raises(PolicyError, match="nope"):
        whatif.sweep_policies(config, "nope", [1])
    with pytest.raises(PolicyError, match="at most"):
        whatif.sweep_policies(config, "ladder.stop_streak", list(range(1, 40)))


def test_labels_are_matched_within_the_window():
    run = whatif.RunData(1, "find the thing", False, _loop_run())
    [ivs] = [whatif.replay_policy(run.steps, run.goal, DEFAULT_POLICY)]
    assert ivs, "a 30-step loop of empty results must be interrupted"
    first = ivs[0][0]
    labels = {1: [(first + whatif.MATCH_WINDOW, "justified"), (first + whatif.MATCH_WINDOW + 1 + 100, "wrongly_killed")]}
    [out] = whatif.evaluate([run], [DEFAULT_POLICY], labels)
    assert out.justified_caught == 1 and out.justified_total == 1
    assert out.wrongly_spared == 1 and out.wrongly_total == 1
    assert out.interrupted == 1


@pytest.fixture
def stored_runs(project):
    exemplars = eval_runs("react_exemplars")
    call_command("loaddemo", verbosity=0)
    builtin_policies_load(project_id=project.pk)
    call_command("importjsonl", str(exemplars), "--project", project.slug, verbosity=0)
    return Run.objects.filter(source="react_exemplars")


def test_a_job_replays_the_snapshot_and_is_cached(stored_runs, user, monkeypatch):
    sent = []
    monkeypatch.setattr("runs.whatif.tasks.execute_whatif.apply_async", lambda *a, **k: sent.append(a))
    config = {k: v for k, v in DEFAULT_POLICY.to_dict().items() if k not in ("name", "version", "description")}
    sweep = {"sweep_path": "ladder.stop_streak", "sweep_values": [2, 10]}
    job = whatif_create(user=user, project_id=project_of(user).pk, config=config, **sweep)
    assert len(sent) == 1 and job.total_runs == 27
    assert whatif_create(user=user, project_id=project_of(user).pk, config=config, **sweep).pk == job.pk
    # A run written after the snapshot does not move the figures of the job.
    Run.objects.create(prompt="later", status="finished", project=team())
    job = whatif_execute(job.pk)
    assert job.status == "done", job.error
    strict, default = job.result
    assert strict["runs"] == default["runs"] == 27
    assert strict["stopped"] >= default["stopped"]
    assert default["stopped"] == 0  # the gold exemplars are never stopped by the default policy
    # ...and a new question over the new data is a new job.
    assert whatif_create(user=user, project_id=project_of(user).pk, config=config, sweep_path="ladder.stop_streak", sweep_values=[2, 10]).pk != job.pk


def test_reviewers_labels_are_counted(stored_runs, user, monkeypatch):
    monkeypatch.setattr("runs.whatif.tasks.execute_whatif.apply_async", lambda *a, **k: None)
    run = stored_runs.first()
    ReviewItem.objects.create(run=run, step_index=3, detector="repetition", tier="stop", label="wrongly_killed")
    config = {"ladder": {"stop_streak": 10}}
    job = whatif_execute(whatif_create(user=user, project_id=project_of(user).pk, config=config).pk)
    [row] = job.result
    assert row["wrongly_total"] == 1 and row["wrongly_spared"] == 1


@pytest.mark.django_db
def test_the_page_names_the_bad_field(auth_client):
    url = reverse("whatif_new")
    assert auth_client.get(url).status_code == 200
    response = auth_client.post(url, {"config": '{"thresholds": {"novelty_min": 3}}'})
    assert response.status_code == 400
    assert "thresholds.novelty_min" in response.content.decode()
    response = auth_client.post(url, {"config": "{oops"})
    assert response.status_code == 400 and "not JSON" in response.content.decode()
    response = auth_client.post(url, {"config": "{}", "sweep_path": "ladder.stop_streak", "sweep_values": "a, b"})
    assert response.status_code == 400 and "numbers separated by commas" in response.content.decode()


def test_the_job_page_polls_until_done_and_saves_a_new_version(stored_runs, auth_client, user, monkeypatch):
    monkeypatch.setattr("runs.whatif.tasks.execute_whatif.apply_async", lambda *a, **k: None)
    base = Policy.objects.get(project=team(), name="default")
    job = whatif_create(user=user, project_id=project_of(user).pk, config={"ladder": {"stop_streak": 7}}, base_policy=base)
    page = auth_client.get(reverse("whatif_job", args=[job.pk]), headers={"HX-Request": "true"})
    assert page.status_code == 200 and 'hx-trigger="every 1s"' in page.content.decode()
    whatif_execute(job.pk)
    page = auth_client.get(reverse("whatif_job", args=[job.pk]), headers={"HX-Request": "true"})
    assert page.status_code == 286
    response = auth_client.post(reverse("whatif_save", args=[job.pk, 0]))
    assert response.status_code == 302
    saved = Policy.objects.filter(project=team(), name="default").order_by("-version").first()
    assert saved.version == base.version + 1 and saved.as_policy().ladder.stop_streak == 7
    assert auth_client.post(reverse("whatif_save", args=[job.pk, 5])).status_code == 404
    assert WhatIfJob.objects.count() == 1


# -- results that look backwards are explained (issue 16, item 7) -------------


def result_row(value, *, interrupted=3, stopped=0, runs=30, justified=(0, 0), wrongly=(0, 0), **extra) -> dict:
    return {"value": value, "runs": runs, "interrupted": interrupted, "stopped": stopped,
            "stopped_succeeded": extra.get("stopped_succeeded", 0), "stopped_failed": extra.get("stopped_failed", stopped),
            "median_stop_step": None, "first_stop_steps": [], "justified_caught": justified[0],
            "justified_total": justified[1], "wrongly_spared": wrongly[0], "wrongly_total": wrongly[1], "config": {}}


def test_a_more_patient_value_that_stops_more_is_explained():
    from runs.whatif.reading import reading

    rows = [result_row(6, stopped=2), result_row(8, stopped=4), result_row(10, stopped=1)]
    notes = reading("ladder.stop_streak", rows)
    assert notes[0].startswith("A higher ladder.stop_streak (stop: turns without progress) makes the watchdog more "
                               "patient")
    backwards = [n for n in notes if "although a higher value should make it less eager" in n]
    assert len(backwards) == 1 and "At ladder.stop_streak = 8 the replay stops 4 runs against 2 at 6" in backwards[0]
    assert "ladder" in backwards[0]  # the reason, in words


def test_a_stricter_value_that_catches_less_is_explained_and_a_flat_sweep_says_so():
    from runs.whatif.reading import reading

    notes = reading("thresholds.novelty_min", [result_row(0.3, interrupted=5), result_row(0.1, interrupted=7)])
    assert any("At thresholds.novelty_min = 0.3 the replay interrupts 5 runs against 7 at 0.1" in n and
               "more eager" in n for n in notes)
    flat = reading("windows.stagnation", [result_row(2), result_row(4), result_row(6)])
    assert any("never decided an intervention" in n for n in flat)
    assert any("No interruption in these runs has a reviewer's label" in n for n in flat)
    labelled = reading("windows.stagnation", [result_row(2, justified=(1, 2)), result_row(4, justified=(2, 2))])
    assert any("within 2 steps" in n for n in labelled)


def test_the_trade_off_chart_spreads_the_values_on_their_own_axis(auth_client, user):
    from django.utils import timezone

    rows = [result_row(v, stopped=s, justified=(1, 2)) for v, s in ((6, 3), (8, 2), (10, 1))]
    job = WhatIfJob.objects.create(project=team(), key="k", created_by=user, policies=[{}] * 3, sweep_path="ladder.stop_streak",
                                   sweep_values=[6, 8, 10], snapshot_at=timezone.now(), status="done", result=rows,
                                   total_runs=30, done_runs=30, duration_s=0.1)
    response = auth_client.get(reverse("whatif_job", args=[job.pk]))
    curve = response.context["curve"]
    assert curve["layout"]["xaxis"]["type"] == "category"
    assert all(trace["x"] == ["6", "8", "10"] for trace in curve["data"])
    assert len(curve["data"]) == 5  # the labels' two lines too
    assert len(curve["layout"]["yaxis"]["title"]["text"]) <= 10
    assert "Reading these figures" in response.content.decode()
