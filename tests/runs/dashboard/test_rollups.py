"""The dashboard read from its per-day rollups shows the numbers today's query
of the runs shows, on the same varied data (issue 31): filter by filter, in
the page's data and in every CSV, after runs end, are re-analysed, relabelled
and deleted; and the trigger keeps the rollups right when two runs of one
day end at once."""

from __future__ import annotations

import random
import threading
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction

from runs.core.models import Policy, Run, Task
from runs.dashboard import rollup_figures
from runs.dashboard.figures import page_figures
from runs.dashboard.models import DayCounts, DayRollup
from runs.dashboard.views import CSV_TABLES, _csv
from runs.failures.models import LayerLabel
from runs.launch.run_analysis import update_from_values
from runs.launch.selectors import RunFilters, runs_filtered
from runs.lifecycle import runs_judge
from runs.reviews.models import ReviewItem
from tracing.core.attribution import LAYERS
from tracing.store.step_deletion import runs_delete

DAY0 = date(2026, 11, 3)
DAYS = 6
MODELS = [("sim", "sim"), ("openai", "gpt-4o-mini"), ("openai", "gpt-4o")]
DETECTORS = ["repetition", "observation", "stagnation", "drift", "budget"]
STATUSES = ["finished"] * 6 + ["error", "stopped", "awaiting", "running", "queued"]


def _random_run(rng: random.Random, *, project, owner, tasks, policies) -> Run:
    provider, model = rng.choice(MODELS)
    status = rng.choice(STATUSES)
    success = rng.choice([True, False, None]) if status == "finished" else None
    steps = rng.choice([0, 1, 3, 7, 12, 12, 25, 59, 60, 75])
    detectors = rng.sample(DETECTORS, k=rng.choice([0, 0, 1, 2]))
    turns = list(range(0, steps, 2)) + ([105] if rng.random() < 0.2 else [])
    run = Run.objects.create(
        project=project, owner=owner, prompt="p", task=rng.choice(tasks), policy=rng.choice(policies),
        provider=provider, model_name=model, mode=rng.choice(["tools", "text"]), status=status, success=success,
        stopped_by="max_steps" if rng.random() < 0.25 else rng.choice(["", "watchdog"]), step_count=steps,
        prompt_tokens=steps * rng.randint(50, 400), completion_tokens=steps * rng.randint(5, 40),
        latency_ms=round(rng.uniform(0, 900) * steps, 3), intervention_count=len(detectors) * rng.randint(1, 3),
        intervention_detectors=detectors, intervention_tiers=sorted({rng.choice(["hint", "redirect", "stop"])
                                                                    for _ in detectors}),
        first_anchor_break=rng.randint(0, steps) if steps and rng.random() < 0.3 else None,
        context_steps=turns, context_tokens=[300 + 17 * i + rng.randint(0, 9) for i in range(len(turns))],
        truncated_steps=[i for i in range(steps) if rng.random() < 0.05] + ([103] if rng.random() < 0.1 else []),
        attribution={"layer": rng.choice(LAYERS).key} if success is False and rng.random() < 0.7 else {},
        tags=rng.sample(["nightly", "a/b", "=formula", "ci"], k=rng.choice([0, 0, 1, 2])),
    )
    # created_at is auto_now_add: the day is set after, as a later write would move it.
    at = datetime.combine(DAY0 + timedelta(days=rng.randrange(DAYS)), datetime.min.time(), tzinfo=UTC)
    Run.objects.filter(pk=run.pk).update(created_at=at + timedelta(minutes=rng.randrange(24 * 60)))
    return run


@pytest.fixture
def history(db, project, user, other_user, task):
    rng = random.Random(31)
    other_task = Task.objects.create(slug="other-task", title="Other", prompt="q")
    strict = Policy.objects.create(project=project, name="strict", version=1, config={})
    strict2 = Policy.objects.create(project=project, name="strict", version=2, config={})
    lenient = Policy.objects.create(project=project, name="lenient", config={})
    kwargs = {"project": project, "owner": user, "tasks": [task, other_task, None],
              "policies": [strict, strict2, lenient, None]}
    made = [_random_run(rng, **kwargs) for _ in range(160)]
    # Another project's runs count on its own dashboard only.
    from tests.projects import project_of

    for _ in range(10):
        _random_run(rng, project=project_of(other_user), owner=other_user, tasks=[task], policies=[None])
    # A fork is a counterfactual, never counted.
    parent = next(r for r in made if r.status == "finished")
    Run.objects.create(project=project, owner=user, prompt="p", parent=parent, fork_from=1, status="finished",
                       success=True, step_count=4)
    # Reviewers' labels (read from their tables on both paths).
    for run in [r for r in made if r.intervention_detectors][:6]:
        ReviewItem.objects.create(run=run, step_index=1, detector=run.intervention_detectors[0], tier="stop",
                                  label=rng.choice(["justified", "wrongly_killed", ""]))
    for run in Run.objects.filter(project=project, status="finished", success=False)[:5]:
        LayerLabel.objects.create(run=run, layer=LAYERS[0].key, guessed=(run.attribution or {}).get("layer", ""))
    # Live runs end; ended runs are re-analysed (the analysis' own writer), relabelled, re-scored and deleted.
    for run in Run.objects.filter(project=project, status="running")[:4]:
        Run.objects.filter(pk=run.pk).update(status="finished", success=True, step_count=run.step_count + 2)
    ended = list(Run.objects.filter(project=project, status="finished", parent__isnull=True).order_by("pk"))
    update_from_values("runs_run", [("first_anchor_break", "int"), ("attribution", "jsonb"),
                                    ("intervention_count", "int"), ("intervention_detectors", "varchar(40)[]")],
                       [(r.pk, 1, '{"layer": "plan"}' if r.success is False else "{}", 1, ["drift"]) for r in ended[:8]])
    for run in ended[8:12]:
        run.tags = ["relabelled", *run.tags]
        run.save(update_fields=["tags"])
    Run.objects.filter(pk__in=[r.pk for r in ended[12:15]]).update(success=False)
    runs_delete(run_ids=[r.pk for r in ended[15:20]], user=user, project=project)
    return project


def _same(a, b, where="data"):
    """Equal, floats to 1e-9 (latency and cost sums are added in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a.keys() ^ b.keys())}"
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} != {len(b)}\n{a}\n{b}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-9), f"{where}: {a} != {b}"
    else:
        assert a == b and type(a) is type(b) or (isinstance(a, Decimal) and a == b), f"{where}: {a!r} != {b!r}"


FILTERS = [
    {},
    {"since": DAY0 + timedelta(days=1), "until": DAY0 + timedelta(days=3)},
    {"until": DAY0},
    {"task": "capital-demo"},
    {"task": "other-task", "mode": "text"},
    {"model": "gpt-4o-mini"},
    {"mode": "tools"},
    {"policy": "strict"},
    {"policy": "off"},
    {"policy": "lenient", "model": "sim", "since": DAY0 + timedelta(days=2)},
    {"model": "no-such-model"},
]


def _both(project, f: RunFilters):
    runs = runs_filtered(Run.objects.for_project(project.pk), f)
    return (page_figures(runs, project.pk, f, from_rollups=False),
            page_figures(runs, project.pk, f, from_rollups=True))


def _assert_equal(project, f: RunFilters) -> None:
    today, rolled = _both(project, f)
    assert today["source"] == "runs" and rolled["source"] == "rollups"
    for key in ("source", "source_note"):
        today.pop(key), rolled.pop(key)
    today["breakdown"], rolled["breakdown"] = asdict(today["breakdown"]), asdict(rolled["breakdown"])
    _same(today, rolled)
    for name in CSV_TABLES:
        assert _csv(name, rolled).content == _csv(name, today).content, name


@pytest.mark.parametrize("filters", FILTERS, ids=[",".join(f) or "none" for f in FILTERS])
def test_the_rollups_numbers_are_the_runs_numbers(history, filters):
    f = RunFilters.of({"since": DAY0 - timedelta(days=1), "until": DAY0 + timedelta(days=DAYS), **filters},
                      finished=True, forks="no")
    assert rollup_figures.serves(f)
    today, _ = _both(history, f)
    if filters.get("model") != "no-such-model":
        assert today["totals"]["runs"] > 0  # the case compares figures, not two empty pages
    _assert_equal(history, f)


def test_the_data_is_varied_enough_to_compare(history):
    f = RunFilters.of({"since": DAY0, "until": DAY0 + timedelta(days=DAYS)}, finished=True, forks="no")
    data, _ = _both(history, f)
    assert len(data["over_time"]) == DAYS and len(data["by_model"]) == 3 and len(data["by_policy"]) == 3
    assert len(data["by_task"]) == 3 and len(data["detectors"]) == 5 and len(data["by_tag"]) == 5
    assert data["totals"]["cost"] > 0 and data["truncated"] and data["context"]
    assert sum(r.guessed for r in data["breakdown"].rows) and data["breakdown"].unguessed
    assert {status for status, in Run.objects.values_list("status")} >= {"finished", "error", "stopped", "awaiting"}


def _rollup_rows() -> list[tuple]:
    return sorted(((r.day, r.task_id, r.policy_id, r.model_name, r.provider, r.mode, r.runs, r.scored, r.successes,
                    r.over_max, r.interrupted, r.anchor_breaks, r.failed, r.steps, r.prompt_tokens,
                    r.completion_tokens, round(r.latency_ms, 3), r.counts) for r in DayRollup.objects.all()), key=repr)


def _day_rows() -> list[tuple]:
    return sorted(((r.day, r.runs, r.counts) for r in DayCounts.objects.all()), key=repr)


def test_the_incremental_rollups_equal_a_rebuild(history):
    rollups_kept, days_kept = _rollup_rows(), _day_rows()
    # No empty row is left behind by a deletion.
    assert rollups_kept and all(r[6] > 0 for r in rollups_kept)
    assert DayCounts.objects.filter(project=history).count() == DAYS and all(r[1] > 0 for r in days_kept)
    DayRollup.objects.all().delete()
    DayCounts.objects.all().delete()
    call_command("rollups")
    assert (_rollup_rows(), _day_rows()) == (rollups_kept, days_kept)
    # --since rebuilds those days and leaves the days before it as they are.
    since = DAY0 + timedelta(days=3)
    DayRollup.objects.filter(day__gte=since).delete()
    DayCounts.objects.filter(day__gte=since).delete()
    DayCounts.objects.filter(day__lt=since).update(runs=999)
    call_command("rollups", since=str(since))
    assert _rollup_rows() == rollups_kept
    assert [r for r in _day_rows() if r[0] >= since] == [r for r in days_kept if r[0] >= since]
    assert {r[1] for r in _day_rows() if r[0] < since} == {999}


def test_a_run_judged_when_it_ends_moves_its_rollup(make_run, project):
    run = make_run(steps=9, status="running")
    assert not DayRollup.objects.exists()  # a live run is not counted
    Run.objects.filter(pk=run.pk).update(status="finished", success=False)
    runs_judge([run.pk], recompute_signals=True)
    f = RunFilters.of({"since": date(2000, 1, 1), "until": date(2999, 1, 1)}, finished=True, forks="no")
    _assert_equal(project, f)
    assert DayRollup.objects.get().runs == 1


def test_filters_the_rollups_do_not_keep_read_the_runs_and_say_so(auth_client, history):
    page = auth_client.get("/dashboard/", {"since": DAY0, "until": DAY0 + timedelta(days=DAYS)})
    assert page.context["source"] == "rollups"
    assert "From the daily rollups" in page.content.decode()
    page = auth_client.get("/dashboard/", {"since": DAY0, "until": DAY0 + timedelta(days=DAYS), "tag": "ci"})
    assert page.context["source"] == "runs" and page.context["totals"]["runs"] > 0
    assert "they do not keep tags" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_runs_of_one_day_ending_at_once_both_count(project, user):
    at = datetime(2026, 11, 5, 12, tzinfo=UTC)
    ids = [Run.objects.create(project=project, owner=user, prompt="p", status="running", step_count=3 + i).pk
           for i in range(2)]
    Run.objects.filter(pk__in=ids).update(created_at=at)
    first_wrote = threading.Event()
    errors = []

    def end(run_id: int, wait: threading.Event | None) -> None:
        try:
            if wait is not None:
                assert wait.wait(10)
            with transaction.atomic():
                Run.objects.filter(pk=run_id).update(status="finished", success=True)
                if wait is None:
                    first_wrote.set()
                    # Hold the rollup row while the other run's end waits on it.
                    threading.Event().wait(0.5)
        except Exception as exc:  # noqa: BLE001 - reported below, from the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=end, args=(ids[0], None)), threading.Thread(target=end, args=(ids[1], first_wrote))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors
    row = DayRollup.objects.get()
    assert (row.runs, row.successes, row.steps, row.counts) == (2, 2, 7, {"h:3": 1, "h:4": 1})
    connection.close()
