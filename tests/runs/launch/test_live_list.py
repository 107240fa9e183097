"""The run list refreshes its live rows by itself; reruns land on their live comparison (issue 15 item 7)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.models import RerunGroup, Run
from tests.htmx import hx
from tests.projects import project_of
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db
LIVE = reverse("runs:live_rows")


def test_the_list_polls_only_its_live_rows(auth_client, make_run):
    done = make_run(steps=2)
    queued, running = make_run(status=Run.Status.QUEUED), make_run(steps=1, status=Run.Status.RUNNING)
    body = auth_client.get(reverse("runs:list")).content.decode()
    assert f'id="run-{done.pk}"' in body and f'id="run-{running.pk}" class="live"' in body
    assert f"{LIVE}?ids={running.pk},{queued.pk}" in body and 'hx-trigger="every 2s"' in body


def test_a_list_without_live_runs_does_not_poll(auth_client, make_run):
    make_run(steps=2)
    body = auth_client.get(reverse("runs:list")).content.decode()
    assert LIVE not in body and '<div id="live-runs"></div>' in body


def test_live_rows_come_back_swapped_by_id_with_the_poller_for_those_still_live(auth_client, make_run):
    a, b = make_run(status=Run.Status.RUNNING), make_run(status=Run.Status.RUNNING)
    record_step(a.pk, StepRecord(index=0, kind="thought", text="t"))
    Run.objects.filter(pk=b.pk).update(status=Run.Status.FINISHED, success=True)
    response = auth_client.get(LIVE, {"ids": f"{a.pk},{b.pk}"}, headers=hx("live-runs"))
    body = response.content.decode()
    assert response.status_code == 200
    assert f'<tr id="run-{a.pk}" class="live" hx-swap-oob="true">' in body
    assert f'<tr id="run-{b.pk}" hx-swap-oob="true">' in body and "✓ correct" in body
    assert f"?ids={a.pk}\"" in body  # the next poll asks only for the run still live


def test_polling_stops_when_no_row_is_live(auth_client, make_run):
    run = make_run(steps=1)
    response = auth_client.get(LIVE, {"ids": str(run.pk)}, headers=hx("live-runs"))
    assert response.status_code == 286
    assert f'<tr id="run-{run.pk}" hx-swap-oob="true">' in response.content.decode()
    assert '<div id="live-runs"></div>' in response.content.decode()


@pytest.mark.parametrize("n", [1, 20])
def test_live_rows_take_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries, n):
    ids = ",".join(str(make_run(steps=2, status=Run.Status.RUNNING).pk) for _ in range(n))
    # 1 session, 2 user, 3 the user's membership (the current project), 4 the runs with their task and policy,
    # 5 the price table (the cost column)
    with django_assert_num_queries(5):
        assert auth_client.get(LIVE, {"ids": ids}, headers=hx("live-runs")).status_code == 200


@pytest.mark.parametrize("ids", ["", "abc", "1,,2", "-1", "1;DROP", ",".join(["1"] * 51), "9" * 40])
def test_bad_ids_are_a_400(auth_client, ids):
    response = auth_client.get(LIVE, {"ids": ids})
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")


def test_unknown_ids_are_left_out_and_polling_stops(auth_client):
    assert auth_client.get(LIVE, {"ids": "999999"}).status_code == 286


def test_anonymous_is_sent_to_login(client, make_run):
    run = make_run(status=Run.Status.RUNNING)
    assert client.get(LIVE, {"ids": str(run.pk)}).status_code == 302


def test_a_member_of_another_project_gets_none_of_its_rows(client, other_user, make_run):
    run = make_run(status=Run.Status.RUNNING)
    client.force_login(other_user)  # bob: not in alice's project
    assert f'id="run-{run.pk}"' not in client.get(LIVE, {"ids": str(run.pk)}).content.decode()


def test_the_reruns_comparison_polls_until_they_finish(auth_client, make_run, user):
    group = RerunGroup.objects.create(name="g", owner=user, project=project_of(user))
    runs = [make_run(status=Run.Status.RUNNING, group=group) for _ in range(3)]
    url = reverse("compare:group", args=[group.pk])
    assert 'hx-trigger="every 2s"' in auth_client.get(url).content.decode()
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(status=Run.Status.FINISHED)
    assert auth_client.get(url, headers=hx("compare-body")).status_code == 286
