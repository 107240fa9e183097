"""The run's Celery task and the worker side: claim, redelivery, crashes, the end of a run.

Unit tests of the services the task calls (STYLE 16); tests/runs/launch/test_worker.py
runs the same paths through a real worker.
"""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from runs.agent.loop import Outcome
from runs.core.endpoints import EndpointNotConfigured
from runs.core.models import Run
from runs.launch import execution
from runs.launch.lease import Lease
from runs.launch.tasks import execute_run
from tracing.store.models import Step
from tracing.store.signals import run_ended

pytestmark = pytest.mark.django_db


class FakeAgent(list):
    """The agent loop: records its calls, then answers or raises `error`."""

    error: BaseException | None = None

    def __call__(self, **kwargs) -> Outcome:
        self.append(kwargs)
        if self.error is not None:
            raise self.error
        return Outcome(status="succeeded", final_answer="Fredville", reason="", stopped_by=None)


@pytest.fixture
def agent(monkeypatch):
    fake = FakeAgent()
    monkeypatch.setattr(execution, "run_agent", fake)
    monkeypatch.setattr(execution, "client_for", lambda run: object())
    return fake


@pytest.fixture
def ended():
    seen = []

    def receiver(sender, *, run_id, **kwargs):
        seen.append(run_id)

    run_ended.connect(receiver, dispatch_uid="test_execution.ended")
    yield seen
    run_ended.disconnect(dispatch_uid="test_execution.ended")


def test_the_first_delivery_claims_a_queued_run_and_runs_it(make_run, agent, ended):
    run = make_run(status="queued")
    done = execution.run_execute(run_id=run.pk, task_id="task-1")
    assert done.status == "finished" and done.success is True and done.final_answer == "Fredville"
    assert done.celery_id == "task-1" and done.started_at is not None and done.finished_at is not None
    assert len(agent) == 1 and ended == [run.pk]


@pytest.fixture
def held():
    """Another worker's lease on a run (its advisory lock, on a connection of its own)."""
    leases = []

    def hold(run_id: int) -> Lease:
        lease = Lease(run_id, "task-other")
        assert lease.acquire()
        leases.append(lease)
        return lease

    yield hold
    for lease in leases:
        lease.release()


def test_a_second_delivery_of_a_claimed_run_does_nothing(make_run, agent, held):
    run = make_run(status="queued")
    assert execution.run_claim(run_id=run.pk, task_id="task-1")
    held(run.pk)
    # Another worker got the same message while the first holds the run: it must not run it too.
    assert execution.run_execute(run_id=run.pk, task_id="task-1") is None
    assert not agent
    assert Run.objects.get(pk=run.pk).status == "running"


def test_a_running_run_nobody_holds_resumes_from_the_stored_steps(make_run, agent):
    # acks_late: the worker died mid-run and Redis hands the message to another
    # (or the reconciler handed the run over under this id).
    run = make_run(steps=3, status="running", celery_id="task-1")
    done = execution.run_execute(run_id=run.pk, task_id="task-1")
    assert done.status == "finished" and done.resumes == 1
    assert [s.index for s in agent[0]["history"]] == [0, 1, 2]


@pytest.mark.parametrize(("status", "celery_id", "holder"), [
    ("running", "task-1", True),  # another worker holds it
    ("running", "task-0", False),  # an older message of the run (it was handed over since)
    ("finished", "task-1", False),  # the run ended meanwhile
    ("stopped", "task-1", False),  # stopped before it started
])
def test_deliveries_that_must_not_run_the_run(make_run, agent, held, status, celery_id, holder):
    run = make_run(status=status, celery_id=celery_id)
    if holder:
        held(run.pk)
    assert execution.run_execute(run_id=run.pk, task_id="task-1") is None
    assert not agent
    assert Run.objects.get(pk=run.pk).status == status


@pytest.mark.parametrize(("error", "reason"), [
    (RuntimeError("boom"), "internal error: RuntimeError: boom"),
    (EndpointNotConfigured("no OPENAI_BASE_URL"), "model endpoint not configured: no OPENAI_BASE_URL"),
    (SoftTimeLimitExceeded(), "the run hit the worker's time limit"),
])
def test_a_crash_ends_the_run_in_error_with_an_error_step(make_run, agent, ended, error, reason):
    run = make_run(steps=2, status="queued")
    agent.error = error
    done = execution.run_execute(run_id=run.pk, task_id="task-1")
    assert (done.status, done.reason, done.success) == ("error", reason, None)  # an infrastructure error is unscored
    last = Step.objects.filter(run=run).order_by("-index").first()
    assert (last.index, last.kind, last.text) == (2, "error", reason)
    assert ended == [run.pk]


def test_the_task_passes_its_id(monkeypatch):
    seen = []
    monkeypatch.setattr("runs.launch.tasks.run_execute", lambda **kw: seen.append(kw))
    execute_run.push_request(id="task-9", delivery_info={"redelivered": True})
    try:
        execute_run.run(42)
    finally:
        execute_run.pop_request()
    assert seen == [{"run_id": 42, "task_id": "task-9"}]


def test_a_run_that_ends_is_scored_against_its_gold_answer(make_run, monkeypatch):
    run = make_run(status="running")
    done = execution.run_finish(run_id=run.pk, outcome=Outcome("succeeded", "Paris", "", None))
    assert (done.status, done.success) == ("finished", False)


@pytest.mark.parametrize(("outcome", "status", "success"), [
    # Status says how it ended, success whether it was right: two things.
    (Outcome("succeeded", "Fredville", "answered"), "finished", True),
    (Outcome("succeeded", "Paris", "answered"), "finished", False),
    (Outcome("failed", None, "step budget exhausted", "max_steps"), "finished", False),
    (Outcome("stopped", "No answer: stopped by the watchdog", "stopped by the watchdog", "watchdog"), "finished", False),
    # A person's Stop is not a wrong answer: unscored.
    (Outcome("stopped", None, "stopped by the user", "user"), "stopped", None),
    (Outcome("error", None, "model endpoint down"), "error", None),
])
def test_status_and_outcome_are_two_things(make_run, outcome, status, success):
    run = make_run(status="running")
    done = execution.run_finish(run_id=run.pk, outcome=outcome)
    assert (done.status, done.success, done.stopped_by) == (status, success, outcome.stopped_by or "")


def test_a_model_answering_an_html_page_ends_the_run_in_error_unscored(make_run):
    from tests.runs.agent.test_bad_endpoint import HTML, client_answering

    run = make_run(status="queued")
    done = execution.run_execute(run_id=run.pk, client=client_answering(HTML.encode(), "text/html"))
    assert (done.status, done.success) == ("error", None)
    assert done.reason.startswith("model answered an HTML page, not a JSON completion: <html>")
