"""The run filter shared by the run list, the dashboard and what-if, and a fork's trajectory."""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import parse_qsl

import pytest
from django.db import connection
from django.utils import timezone

from runs.core.models import Policy, Run
from runs.launch.selectors import POLICY_OFF, RunFilters, run_history, runs_filtered, trajectory
from tests.projects import team
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db


def _ids(qs):
    return sorted(qs.values_list("pk", flat=True))


def test_dates_are_whole_utc_days_on_created_at(make_run):
    today = timezone.now().date()
    old, new = make_run(), make_run()
    Run.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    assert _ids(runs_filtered(Run.objects.all(), RunFilters(since=today, until=today))) == [new.pk]
    three_ago = today - timedelta(days=3)
    assert _ids(runs_filtered(Run.objects.all(), RunFilters(since=three_ago, until=three_ago))) == [old.pk]


def test_the_date_filter_is_a_range_the_list_index_serves(make_run):
    # created_at::date would hide the column from run_list_idx; a range on it does not.
    qs = runs_filtered(Run.objects.order_by("-created_at", "-id"), RunFilters(since=date(2024, 1, 1),
                                                                               until=date(2024, 1, 31)))
    sql, params = qs.query.sql_with_params()
    assert "::date" not in sql and "AT TIME ZONE" not in sql
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert "run_list_idx" in plan and "Index Cond" in plan, plan


def test_policy_off_means_runs_without_a_watchdog(make_run):
    policy = Policy.objects.create(project=team(), name="default", config={})
    watched, unwatched = make_run(policy=policy), make_run()
    assert _ids(runs_filtered(Run.objects.all(), RunFilters(policy="default"))) == [watched.pk]
    assert _ids(runs_filtered(Run.objects.all(), RunFilters(policy=POLICY_OFF))) == [unwatched.pk]


def test_finished_leaves_out_live_runs(make_run):
    done, _ = make_run(status="finished"), make_run(status="running")
    assert _ids(runs_filtered(Run.objects.all(), RunFilters(finished=True))) == [done.pk]


def test_every_filter_narrows(make_run):
    hit = make_run(status="finished", model_name="m1", mode="text", source="api", step_count=7, success=False,
                   stopped_by="max_steps", intervention_count=1, intervention_detectors=["drift"],
                   intervention_tiers=["hint"], first_anchor_break=3)
    make_run()
    f = RunFilters(status="finished", task=hit.task.slug, model="m1", mode="text", source="api", intervened="yes",
                   detector="drift", tier="hint", steps_min=7, steps_max=7, outcome="wrong", stopped_by="max_steps",
                   anchor="broken")
    assert _ids(runs_filtered(Run.objects.all(), f)) == [hit.pk]


def test_filters_round_trip_through_the_run_list_query():
    f = RunFilters(task="t", policy=POLICY_OFF, since=date(2024, 5, 1), until=date(2024, 5, 2), finished=True)
    assert dict(parse_qsl(f.query(tier="stop"))) == {"task": "t", "policy": "off", "since": "2024-05-01",
                                                     "until": "2024-05-02", "tier": "stop"}
    assert RunFilters.of({"task": "t", "unknown": 1, "steps_min": None}) == RunFilters(task="t")


def _add(run, index, kind="thought"):
    record_step(run.pk, StepRecord(index=index, kind=kind, text=f"{kind} {run.pk}:{index}"))


def test_a_forks_first_steps_are_its_parents(make_run):
    parent = make_run(steps=6)
    fork = make_run(parent=parent, fork_from=4)
    _add(fork, 4)
    _add(fork, 5)
    assert [(s.run_id, s.index) for s in trajectory(fork)] == [(parent.pk, i) for i in range(4)] + [(fork.pk, 4),
                                                                                                   (fork.pk, 5)]
    assert [(s.run_id, s.index) for s in trajectory(fork, lo=2, hi=4)] == [(parent.pk, 2), (parent.pk, 3),
                                                                           (fork.pk, 4)]
    assert [s.index for s in trajectory(fork, limit=5)] == [0, 1, 2, 3, 4]
    assert [s.index for s in run_history(fork)] == [0, 1, 2, 3, 4, 5]


def test_reading_a_trajectory_takes_at_most_two_queries(make_run, django_assert_num_queries):
    parent = make_run(steps=6)
    fork = make_run(parent=parent, fork_from=4)
    with django_assert_num_queries(2):  # the parent's steps, the fork's
        trajectory(fork)
    with django_assert_num_queries(1):  # only the parent's part is asked for
        trajectory(fork, hi=3)
    with django_assert_num_queries(1):  # only the fork's own
        trajectory(fork, lo=4)
    with django_assert_num_queries(1):
        trajectory(parent)
