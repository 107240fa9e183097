"""The reconciler's sweep under an advisory lock, its banner, /healthz and /metrics (issue 28)."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest
from django.db import OperationalError, connection
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from runs.health import middleware
from runs.health.models import SweepMark
from runs.health.sweeps import MARK, STALE_SWEEP_S, sweeps_stalled
from runs.launch.sweeper import SWEEP_LOCK_KEY, sweep_locked

pytestmark = pytest.mark.django_db


def _other_session():
    s = connection.settings_dict
    return psycopg.connect(dbname=s["NAME"], user=s["USER"], host=s["HOST"], port=s["PORT"],
                           password=s["PASSWORD"] or None, autocommit=True)


def test_a_sweep_records_when_it_ran():
    sweep = sweep_locked(send=lambda run_id, task_id: None)
    assert sweep is not None
    mark = SweepMark.objects.get(name=MARK)
    assert timezone.now() - mark.at < timedelta(seconds=5) and mark.host


def test_a_second_sweeper_skips_while_one_sweeps():
    with _other_session() as other:
        other.execute("SELECT pg_advisory_lock(%s)", [SWEEP_LOCK_KEY])
        assert sweep_locked(send=lambda run_id, task_id: None) is None
        assert not SweepMark.objects.exists()
        other.execute("SELECT pg_advisory_unlock(%s)", [SWEEP_LOCK_KEY])
    assert sweep_locked(send=lambda run_id, task_id: None) is not None


@pytest.mark.parametrize(("age", "swept"), [(1, False), (4, True)])
def test_a_workers_sweep_skips_when_someone_just_swept(age, swept):
    # Every worker's sweeper asks every 5 s: one recent sweep serves them all.
    SweepMark.objects.create(name=MARK, at=timezone.now() - timedelta(seconds=age))
    assert (sweep_locked(send=lambda run_id, task_id: None, unless_within_s=2.5) is not None) is swept


def test_a_workers_sweeper_sweeps_at_once_and_outlives_a_database_error(monkeypatch):
    from runs.launch import sweeper

    calls = []

    def sweep(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise OperationalError("the database went away")

    monkeypatch.setattr(sweeper, "sweep_locked", sweep)
    thread = sweeper.Sweeper(send=lambda run_id, task_id: None, interval_s=0.05)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        thread.stop()
    assert len(calls) >= 3 and calls[0]["unless_within_s"] == 0.025


@pytest.mark.parametrize(("age", "stalled"), [(STALE_SWEEP_S - 2, False), (STALE_SWEEP_S + 2, True)])
def test_the_run_list_says_when_sweeps_have_stopped(auth_client, age, stalled):
    SweepMark.objects.create(name=MARK, at=timezone.now() - timedelta(seconds=age))
    assert sweeps_stalled() is stalled
    page = auth_client.get("/runs/").content.decode()
    assert ("The reconciler last swept" in page) is stalled


def test_no_banner_before_the_first_sweep(auth_client):
    assert "The reconciler last swept" not in auth_client.get("/runs/").content.decode()


def test_healthz_answers_ok_without_a_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_metrics_in_prometheus_format(client, make_run):
    make_run(steps=3, status="running")
    SweepMark.objects.create(name=MARK, at=timezone.now() - timedelta(seconds=12))
    response = client.get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'agentlab_runs{status="running"} 1.0' in text and 'agentlab_runs{status="finished"} 0.0' in text
    age = float(next(line.split()[1] for line in text.splitlines()
                     if line.startswith("agentlab_reconciler_last_sweep_age_seconds ")))
    assert 12 <= age < 20
    assert "agentlab_queue_depth{" in text and "agentlab_steps_stored_per_second 0.05" in text
    assert "agentlab_http_5xx_responses_total" in text and "agentlab_worker_heartbeat_age_seconds" in text


def test_5xx_responses_are_counted():
    before = middleware.server_errors()
    counter = middleware.ServerErrorCounter(lambda request: HttpResponse(status=503))
    counter(RequestFactory().get("/"))
    middleware.ServerErrorCounter(lambda request: HttpResponse(status=404))(RequestFactory().get("/"))
    assert middleware.server_errors() == before + 1
