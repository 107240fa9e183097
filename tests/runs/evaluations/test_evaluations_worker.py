"""Evaluations executed by a real Celery worker against Postgres and Redis (not eager mode)."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.core.models import Run, Task
from runs.evaluations.models import Evaluation, EvaluationRun
from runs.evaluations.selectors import evaluation_report
from runs.evaluations.services import EvaluationSpec, evaluation_create
from tests.projects import project_of
from tracing.store.models import Step

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TASKS = ("lumen-bridge-length", "salt-lantern-birthplace")


@pytest.fixture
def suite(transactional_db):
    call_command("loaddemo", verbosity=0)
    return list(Task.objects.filter(slug__in=TASKS))


def wait_until(predicate, timeout: float = 90.0, step: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(step)
    raise AssertionError(f"still waiting after {timeout} s")


def live(evaluation: Evaluation) -> int:
    return Run.objects.filter(evaluation_entry__evaluation=evaluation, status__in=Run.LIVE_STATUSES).count()


def test_an_evaluation_from_the_form_runs_every_strategy_as_ordinary_runs(worker, suite, auth_client):
    response = auth_client.post(reverse("evaluations:new"), {
        "tasks": list(TASKS), "strategies": ["no_tools", "one_retrieval", "fixed_workflow", "react_off"],
        "provider": "sim", "mode": "tools", "temperature": 0, "reruns": 2, "max_steps": 10,
        "max_tokens": 20000, "max_seconds": 60, "seed": 11,
    })
    assert response.status_code == 302
    evaluation = Evaluation.objects.get()
    wait_until(lambda: live(evaluation) == 0)
    entries = list(EvaluationRun.objects.filter(evaluation=evaluation).select_related("run"))
    assert len(entries) == 2 * 4 * 2
    assert all(e.run.status == Run.Status.FINISHED for e in entries), [(e.run.status, e.run.reason) for e in entries]
    # Measured when each run ended (the run-end hook in the worker).
    wait_until(lambda: EvaluationRun.objects.filter(evaluation=evaluation, measured=False).count() == 0, 30)
    for entry in entries:
        kinds = list(Step.objects.filter(run=entry.run).order_by("index").values_list("kind", flat=True))
        assert kinds[-1] in ("final", "intervention")
        scripted = Step.objects.filter(run=entry.run, kind="action", meta__scripted=True).count()
        assert scripted == {"no_tools": 0, "one_retrieval": 1, "fixed_workflow": 2, "react_off": 0}[entry.strategy]
    report = evaluation_report(evaluation)
    by = {s.strategy: s for s in report.strategies}
    assert by["no_tools"].success.count == 0 and by["no_tools"].success.n == 4
    assert all(s.ended == 4 and s.errors == 0 for s in report.strategies)
    page = auth_client.get(evaluation.get_absolute_url())
    assert page.status_code == 200 and "every 2s" not in page.content.decode()


def test_a_model_that_goes_down_mid_evaluation_ends_its_runs_in_error_reported_apart(worker, suite, user):
    from tests.servers import start_sim_server, stop

    proc, url = start_sim_server()
    try:
        evaluation = evaluation_create(owner=user, project=project_of(user), spec=EvaluationSpec(
            tasks=suite, strategies=["one_retrieval", "react_off"], reruns=3, base_url=url, max_steps=10,
            max_seconds=60, seed=3, settings={"sim": {"latency_ms": 250}}))
        wait_until(lambda: Run.objects.filter(evaluation_entry__evaluation=evaluation,
                                              status=Run.Status.FINISHED).count() >= 2)
    finally:
        stop(proc)
    wait_until(lambda: live(evaluation) == 0)
    statuses = list(Run.objects.filter(evaluation_entry__evaluation=evaluation).values_list("status", flat=True))
    assert statuses.count(Run.Status.FINISHED) >= 2 and statuses.count(Run.Status.ERROR) >= 1
    assert set(statuses) <= {Run.Status.FINISHED, Run.Status.ERROR}
    report = evaluation_report(evaluation)
    assert report.errors == statuses.count(Run.Status.ERROR)
    for s in report.strategies:
        # An error is never a failure of the strategy: it is not in n.
        assert s.success.n + s.errors == 2 * 3
    assert Run.objects.filter(evaluation_entry__evaluation=evaluation, status=Run.Status.ERROR,
                              success__isnull=False).count() == 0
