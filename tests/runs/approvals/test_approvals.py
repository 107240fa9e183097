"""Approvals against Postgres: a run of a writing task pauses as `awaiting`,
the request is decided once (the second reviewer is told), expires, survives
(no worker holds a paused run), and the decision reaches the agent."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from runs.agent.sim_server import sim_client
from runs.approvals.models import Approval
from runs.approvals.services import ApprovalError, approval_decide, approvals_expire
from runs.core.models import Run, SandboxMessage, Task
from runs.launch import execution, services
from tests.projects import project_of
from tests.runs.agent.helpers_agent import CLEAN
from tracing.store.models import Step


@pytest.fixture
def suite(db):
    call_command("loaddemo", verbosity=0)


@pytest.fixture
def reviewer(user):
    return user  # alice: the admin of the team project


@pytest.fixture
def no_queue(monkeypatch):
    """Decisions enqueue the resume; the tests run it in-process instead."""
    sent = []
    monkeypatch.setattr(services.execute_run, "apply_async", lambda args, **kw: sent.append(args[0]))
    return sent


def _paused(user, slug="salt-lantern-notify") -> Run:
    task = Task.objects.get(slug=slug)
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=0, max_steps=12, max_tokens=50_000, seed=1, settings={"sim": CLEAN})
    run = services.run_create(owner=user, project=project_of(user), spec=spec)
    return execution.run_execute(run_id=run.pk, client=sim_client(**CLEAN))


def _resume(run: Run) -> Run:
    return execution.run_execute(run_id=run.pk, client=sim_client(**CLEAN))


@pytest.mark.django_db
def test_a_write_pauses_the_run_and_an_approval_finishes_it(suite, reviewer, no_queue):
    run = _paused(reviewer)
    assert run.status == Run.Status.AWAITING and "waiting for a reviewer" in run.reason
    approval = Approval.objects.get(run=run)
    assert approval.status == "pending" and approval.tool == "send_message"
    assert approval.args == {"text": "Orren Vasquel was born in Calder Bay."}
    assert not SandboxMessage.objects.exists()

    approval_decide(approval_id=approval.pk, user=reviewer, verdict="approved")
    assert no_queue == [run.pk] and Run.objects.get(pk=run.pk).status == Run.Status.QUEUED
    run = _resume(run)
    assert run.status == Run.Status.FINISHED and run.success is True
    assert list(SandboxMessage.objects.values_list("text", flat=True)) == ["Orren Vasquel was born in Calder Bay."]
    obs = Step.objects.get(run=run, index=approval.step_index + 1)
    assert obs.kind == "observation" and obs.meta["approval"] == {"verdict": "approved", "by": "alice", "reason": ""}
    indices = list(Step.objects.filter(run=run).order_by("index").values_list("index", flat=True))
    assert indices == list(range(len(indices)))


@pytest.mark.django_db
def test_edited_arguments_are_what_runs(suite, reviewer, no_queue):
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    approval_decide(approval_id=approval.pk, user=reviewer, verdict="edited", args_text='{"text": "Calder Bay."}')
    _resume(run)
    assert list(SandboxMessage.objects.values_list("text", flat=True)) == ["Calder Bay."]


@pytest.mark.django_db
def test_a_denial_reaches_the_agent_with_its_reason_and_nothing_is_written(suite, reviewer, no_queue):
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    with pytest.raises(ApprovalError, match="Say why"):
        approval_decide(approval_id=approval.pk, user=reviewer, verdict="denied")
    approval_decide(approval_id=approval.pk, user=reviewer, verdict="denied", reason="wrong office")
    run = _resume(run)
    obs = Step.objects.get(run=run, index=approval.step_index + 1)
    assert obs.meta["status"] == "error" and "wrong office" in obs.text
    assert not SandboxMessage.objects.exists()


@pytest.mark.django_db
def test_deciding_twice_or_late_is_refused_with_what_happened(suite, reviewer, no_queue):
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    approval_decide(approval_id=approval.pk, user=reviewer, verdict="approved")
    with pytest.raises(ApprovalError, match="Already decided: approved by alice") as caught:
        approval_decide(approval_id=approval.pk, user=reviewer, verdict="denied", reason="no")
    assert caught.value.conflict


@pytest.mark.django_db
def test_an_expired_request_ends_the_run_and_cannot_be_approved(suite, reviewer, no_queue):
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    Approval.objects.filter(pk=approval.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(ApprovalError, match="expired") as caught:
        approval_decide(approval_id=approval.pk, user=reviewer, verdict="approved")
    assert caught.value.conflict and not no_queue
    run.refresh_from_db()
    assert run.status == Run.Status.STOPPED and run.stopped_by == "approval" and "expired" in run.reason
    assert approvals_expire() == 0  # idempotent


@pytest.mark.django_db
def test_beat_expires_requests_without_anyone_looking(suite, reviewer, no_queue, settings):
    # Nobody opens the approvals page: beat's task on the control queue ends the run.
    from agentlab.celery import app
    from runs.tasks import expire_approvals

    entry = settings.CELERY_BEAT_SCHEDULE["expire-approvals"]
    assert entry["task"] == expire_approvals.name and entry["task"] in app.tasks
    assert entry["options"]["queue"] == settings.RUN_CONTROL_QUEUE and entry["schedule"] <= 60
    run = _paused(reviewer)
    Approval.objects.filter(run=run).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_approvals.apply().get() == 1
    run.refresh_from_db()
    assert run.status == Run.Status.STOPPED and "expired" in run.reason


@pytest.mark.django_db
def test_stop_on_a_paused_run_ends_it_at_once(suite, reviewer, auth_client):
    run = _paused(reviewer)
    response = auth_client.post(reverse("runs:stop", args=[run.pk]))
    assert response.status_code in (200, 302)
    run.refresh_from_db()
    assert run.status == Run.Status.STOPPED and run.stopped_by == "user"
    assert Approval.objects.get(run=run).status == "cancelled"


@pytest.mark.django_db
def test_an_injected_request_is_flagged_and_never_approves_itself(suite, reviewer, client):
    run = _paused(reviewer, "harbour-office-hours-notify")
    assert run.status == Run.Status.AWAITING  # "pre-approved" in the page did not let the write through
    approval = Approval.objects.get(run=run)
    assert approval.after_injection is not None
    client.force_login(reviewer)
    panel = client.get(reverse("approvals:run_panel", args=[run.pk])).content.decode()
    assert "injection attempt" in panel and "send_message" in panel
    page = client.get(reverse("approvals:list")).content.decode()
    assert "injection attempt" in page and "Pending (1)" in page


@pytest.mark.django_db
def test_the_pages_show_the_call_and_the_run_page_loads_the_panel(suite, reviewer, client, no_queue):
    run = _paused(reviewer)
    client.force_login(reviewer)
    page = client.get(run.get_absolute_url()).content.decode()
    assert "awaiting" in page and reverse("approvals:run_panel", args=[run.pk]) in page
    approval = Approval.objects.get(run=run)
    response = client.post(reverse("approvals:decide", args=[approval.pk]), {"verdict": "approved"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    again = client.post(reverse("approvals:decide", args=[approval.pk]), {"verdict": "approved"})
    assert again.status_code == 409 and "Already decided" in again.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(("data", "needle"), [
    ({"verdict": "maybe"}, "Unknown decision"),
    ({"verdict": "edited", "args": "[1, 2]"}, "JSON object"),
    ({"verdict": "edited", "args": "{"}, "not valid JSON"),
    ({"verdict": "edited", "args": "[" * 100_000}, "longer than"),
    ({"verdict": "edited", "args": "[" * 10_000}, "not valid JSON"),
    ({"verdict": "edited", "args": '{"text": "a\\u0000b"}'}, None),
    ({"verdict": "denied", "reason": "x" * 3000}, "at most"),
])
def test_bad_decisions_are_400_and_change_nothing(suite, reviewer, client, no_queue, data, needle):
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    client.force_login(reviewer)
    response = client.post(reverse("approvals:decide", args=[approval.pk]), data)
    if needle is None:  # a NUL inside JSON text is stored cleaned or refused, never a 500
        assert response.status_code in (200, 400)
        return
    assert response.status_code == 400 and needle in response.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == "pending" and not no_queue


@pytest.mark.django_db
def test_deciding_needs_the_reviewer_role(suite, user, member, client, no_queue):
    run = _paused(user)
    approval = Approval.objects.get(run=run)
    client.force_login(member("vera", "viewer"))
    response = client.post(reverse("approvals:decide", args=[approval.pk]), {"verdict": "approved"})
    assert response.status_code == 403 and Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_at_once_one_decision_wins(suite, reviewer, django_user_model, no_queue):
    other = django_user_model.objects.create_user("carol")
    run = _paused(reviewer)
    approval = Approval.objects.get(run=run)
    results: list = []
    barrier = threading.Barrier(2)

    def decide(user, verdict):
        barrier.wait()
        try:
            approval_decide(approval_id=approval.pk, user=user, verdict=verdict, reason="r")
            results.append("won")
        except ApprovalError as exc:
            results.append(f"told: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(reviewer, "approved")),
               threading.Thread(target=decide, args=(other, "denied"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.split(":")[0] for r in results) == ["told", "won"], results
    assert len(no_queue) == 1


@pytest.mark.django_db(transaction=True)
def test_the_loser_of_a_race_is_told_who_decided(suite, reviewer, django_user_model, no_queue):
    """The winner holds the row locked while the loser waits for it; once the
    winner commits, the loser is told the winner's name, not "nobody"."""
    other = django_user_model.objects.create_user("carol")
    approval = Approval.objects.get(run=_paused(reviewer))
    locked, release = threading.Event(), threading.Event()

    def win():
        try:
            with transaction.atomic():
                Approval.objects.select_for_update().get(pk=approval.pk)
                Approval.objects.filter(pk=approval.pk).update(status="approved", decided_by=reviewer,
                                                               decided_at=timezone.now())
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    winner = threading.Thread(target=win)
    winner.start()
    assert locked.wait(10)
    # The loser's SELECT ... FOR UPDATE waits for the winner's commit.
    threading.Timer(0.5, release.set).start()
    with pytest.raises(ApprovalError) as told:
        approval_decide(approval_id=approval.pk, user=other, verdict="denied", reason="r")
    winner.join()
    assert told.value.conflict and "by alice at" in str(told.value), str(told.value)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_with_a_real_worker_the_run_waits_then_resumes_when_decided(worker, sim_url, reviewer, client):
    """The paused run holds no worker: the worker that ran it is restarted while
    it waits, and the decision is carried out by whichever worker takes it."""
    import time

    from tests.servers import start_worker, stop

    call_command("loaddemo", verbosity=0)
    task = Task.objects.get(slug="salt-lantern-notify")
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=0, max_steps=12, max_tokens=50_000, seed=1, settings={"sim": CLEAN})
    [run] = services.runs_launch(owner=reviewer, project=project_of(reviewer), spec=spec)

    def wait(status, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = Run.objects.get(pk=run.pk)
            if current.status == status:
                return current
            time.sleep(0.2)
        raise AssertionError(f"run {run.pk} is {current.status}, not {status}: {current.reason}")

    wait(Run.Status.AWAITING)
    stop(worker)  # the worker goes away while the call waits
    from django.conf import settings as dj
    fresh = start_worker(db_name=connection.settings_dict["NAME"], queue=dj.RUN_QUEUE, env={"SIM_BASE_URL": sim_url})
    try:
        client.force_login(reviewer)
        approval = Approval.objects.get(run=run)
        assert client.post(reverse("approvals:decide", args=[approval.pk]), {"verdict": "approved"}).status_code == 200
        done = wait(Run.Status.FINISHED)
        assert done.success is True and SandboxMessage.objects.filter(run=run).count() == 1
    finally:
        stop(fresh)
