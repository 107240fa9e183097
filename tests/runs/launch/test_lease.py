"""The worker's lease (runs.launch.lease): a database call retried through an
outage, given up after RUN_DB_PATIENCE_S, never retried once the run was
handed to another worker."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from runs.core.models import Run
from runs.launch import lease as lease_module
from runs.launch.lease import DatabaseGone, Lease, LeaseLost

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_sleep(monkeypatch):
    slept = []
    monkeypatch.setattr(lease_module.time, "sleep", slept.append)
    return slept


@pytest.fixture
def held(make_run):
    run = make_run(status="running", celery_id="task-1")
    lease = Lease(run.pk, "task-1")
    assert lease.acquire()
    yield run, lease
    lease.release()


class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def __call__(self, value):
        self.calls += 1
        if self.calls <= self.failures:
            raise OperationalError("server closed the connection unexpectedly")
        return value


def test_a_call_is_retried_with_backoff_through_an_outage(held, no_sleep):
    _, lease = held
    flaky = Flaky(failures=4)
    assert lease.durable(flaky)("written") == "written"
    assert flaky.calls == 5
    assert no_sleep == [0.25, 0.5, 1.0, 2.0]


def test_the_worker_gives_up_after_its_patience(held, no_sleep, settings):
    settings.RUN_DB_PATIENCE_S = 0.0
    _, lease = held
    with pytest.raises(DatabaseGone, match="the database was unreachable for 0 s: server closed"):
        lease.durable(Flaky(failures=100))("x")


def test_a_run_handed_over_meanwhile_is_dropped_not_written(held, no_sleep):
    run, lease = held
    lease._conn.close()  # the lease's session died with the outage: its lock is gone
    Run.objects.filter(pk=run.pk).update(celery_id="task-2")  # the reconciler handed the run over
    flaky = Flaky(failures=1)
    with pytest.raises(LeaseLost):
        lease.durable(flaky)("x")
    assert flaky.calls == 1  # the failed write is not tried again


def test_a_lease_is_exclusive_and_ends_with_its_session(make_run):
    run = make_run(status="running", celery_id="task-1")
    first, second = Lease(run.pk, "task-1"), Lease(run.pk, "task-1")
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()


def test_the_search_tool_queries_through_the_lease(held, no_sleep):
    """The worker hands its search tool `lease.durable`: a database outage is
    ridden out, not shown to the agent as "Search failed"."""
    from runs.core.models import Document
    from runs.launch.agent_corpus import PostgresSearch

    Document.objects.create(slug="lumen", title="Lumen Bridge", body="The Lumen Bridge is 1,284 metres long.")
    _, lease = held
    [doc] = PostgresSearch(guard=lease.durable).search("Lumen Bridge length")
    assert doc.slug == "lumen"
