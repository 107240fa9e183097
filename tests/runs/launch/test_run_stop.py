"""Stopping a run: a queued one at once, a running one at its next step."""

from __future__ import annotations

import pytest
from django.urls import reverse
from kombu.exceptions import OperationalError

from runs.core.models import Run
from runs.launch import services
from runs.launch.execution import StopFlag
from runs.launch.lease import Lease
from runs.launch.tasks import execute_run
from tests.htmx import hx

pytestmark = pytest.mark.django_db


@pytest.fixture
def revoked(monkeypatch):
    sent = []
    monkeypatch.setattr(execute_run.app.control, "revoke", lambda task_id, **kw: sent.append(task_id))
    return sent


def test_a_queued_run_stops_at_once_and_its_message_is_revoked(make_run, revoked):
    run = make_run(status="queued", celery_id="task-1")
    stopped = services.run_stop(run=run)
    assert (stopped.status, stopped.stopped_by, stopped.stop_requested) == ("stopped", "user", True)
    assert stopped.success is None  # a Stop is no answer, not a wrong one
    assert stopped.reason == "stopped by user before it started" and stopped.finished_at is not None
    assert revoked == ["task-1"]


def test_a_queued_run_stops_even_with_the_broker_down(make_run, monkeypatch):
    def refuse(task_id, **kw):
        raise OperationalError("connection refused")

    monkeypatch.setattr(execute_run.app.control, "revoke", refuse)
    run = make_run(status="queued")
    assert services.run_stop(run=run).status == "stopped"


@pytest.fixture
def held():
    """Another worker's lease on a run (its advisory lock, on a connection of its own)."""
    leases = []

    def hold(run: Run) -> Lease:
        lease = Lease(run.pk, run.celery_id)
        assert lease.acquire()
        leases.append(lease)
        return lease

    yield hold
    for lease in leases:
        lease.release()


def test_a_running_run_is_asked_to_stop_and_its_loop_sees_it(make_run, revoked, held):
    run = make_run(status="running")
    held(run)
    flag = StopFlag(run.pk)
    assert flag() is False
    asked = services.run_stop(run=run)
    assert (asked.status, asked.stop_requested) == ("running", True) and not revoked
    flag.checked_at = 0.0  # past the check interval
    assert flag() is True


def test_a_running_run_no_worker_holds_stops_at_once(make_run, revoked):
    # Its worker was killed: nothing would ever read the flag.
    run = make_run(steps=3, status="running")
    stopped = services.run_stop(run=run)
    assert (stopped.status, stopped.stopped_by, stopped.reason) == ("stopped", "user", "stopped by the user")
    assert stopped.success is None and stopped.finished_at is not None
    last = stopped.steps.order_by("-index").first()
    assert (last.index, last.kind, last.meta["detector"]) == (3, "intervention", "user")


def test_a_run_the_user_stopped_mid_way_ends_stopped_and_unscored(make_run):
    """The loop honours the Stop (runs.agent.loop) and the run ends unscored, though it
    has a gold answer and no answer: a Stop is not a wrong answer."""
    from runs.agent.loop import Outcome
    from runs.launch.execution import run_finish

    run = make_run(status="running", stop_requested=True)
    assert run.task.gold_answer
    done = run_finish(run_id=run.pk, outcome=Outcome("stopped", None, "stopped by the user", "user"))
    assert (done.status, done.success, done.stopped_by) == ("stopped", None, "user")


def test_an_ended_run_is_left_as_it_is(make_run, revoked):
    run = make_run(status="finished")
    after = services.run_stop(run=run)
    assert (after.status, after.stop_requested) == ("finished", False) and not revoked


def test_the_stop_button_answers_htmx_with_the_header_and_a_form_with_a_redirect(auth_client, make_run, revoked):
    run = make_run(status="queued")
    # The button's form targets #run-header: htmx names it.
    response = auth_client.post(reverse("runs:stop", args=[run.pk]), headers=hx("run-header"))
    assert response.status_code == 200 and 'id="run-header"' in response.content.decode()
    assert Run.objects.get(pk=run.pk).status == "stopped"
    other = make_run(status="running")
    response = auth_client.post(reverse("runs:stop", args=[other.pk]))
    assert response.status_code == 302 and response["Location"] == other.get_absolute_url()
