"""A real Celery worker process against real Postgres and Redis (not eager mode)."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.core.models import Run, Task
from tests.projects import team
from tracing.store.models import Step

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def suite(transactional_db):
    call_command("loaddemo", verbosity=0)
    return Task.objects.all()


def wait_for(run_ids: list[int], timeout: float = 60.0) -> list[Run]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(Run.objects.filter(pk__in=run_ids).order_by("pk"))
        if all(not r.is_live for r in runs):
            return runs
        time.sleep(0.2)
    raise AssertionError(f"runs still live after {timeout} s: {[(r.pk, r.status) for r in runs]}")


def test_a_run_started_from_the_form_streams_its_steps_into_postgres(worker, suite, auth_client):
    task = suite.first()
    response = auth_client.post(reverse("runs:new"), {
        "task": task.slug, "provider": "sim", "mode": "tools", "temperature": 0.5,
        "max_steps": 12, "max_tokens": 20000, "reruns": 1, "seed": 1,
        "sim_forget": 0, "sim_rephrase": 0, "sim_wrong_premise": 0, "sim_early_finish": 0, "sim_ignore_hint": 0,
    })
    assert response.status_code == 302
    run = Run.objects.get()
    assert response["Location"] == run.get_absolute_url()
    [run] = wait_for([run.pk])
    assert run.status == Run.Status.FINISHED, run.reason
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [s.index for s in steps] == list(range(len(steps)))
    assert run.step_count == len(steps)
    assert {"action", "observation", "final"} <= {s.kind for s in steps}
    assert run.prompt_tokens == sum(s.prompt_tokens for s in steps)
    assert run.success is True, (run.final_answer, task.gold_answer)


def test_reruns_in_text_mode_differ_by_seed_and_all_end(worker, suite, auth_client):
    task = suite.first()
    response = auth_client.post(reverse("runs:new"), {
        "task": task.slug, "provider": "sim", "mode": "text", "temperature": 1.0,
        "max_steps": 12, "max_tokens": 20000, "reruns": 4,
    })
    assert response.status_code == 302
    runs = wait_for(list(Run.objects.values_list("pk", flat=True)))
    assert len(runs) == 4
    assert len({r.group_id for r in runs}) == 1 and runs[0].group_id is not None
    assert all(r.status == Run.Status.FINISHED for r in runs), [(r.status, r.reason) for r in runs]
    assert len({r.seed for r in runs}) == 4


def test_a_dead_model_endpoint_ends_the_run_in_error_with_the_reason(worker, suite, user):
    from runs.launch import services

    task = suite.first()
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=0, max_steps=5, max_tokens=5000, base_url="http://127.0.0.1:9/v1")
    [run] = services.runs_launch(owner=user, project=team(), spec=spec)
    [run] = wait_for([run.pk])
    assert run.status == Run.Status.ERROR
    last = Step.objects.filter(run=run).order_by("-index").first()
    assert last.kind == "error"
    assert "connect" in last.text.lower() or "connection" in last.text.lower()


def test_the_stop_button_ends_a_running_run(worker, suite, auth_client, user):
    from runs.launch import services

    task = suite.first()
    # Rephrasing in circles with a big budget: the run would go on for a while.
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=1, max_steps=200, max_tokens=1_000_000, seed=3,
                            settings={"sim": {"rephrase": 1.0, "early_finish": 0.0, "latency_ms": 400}})
    [run] = services.runs_launch(owner=user, project=team(), spec=spec)
    deadline = time.monotonic() + 30
    while not Step.objects.filter(run=run).exists():
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.1)
    response = auth_client.post(reverse("runs:stop", args=[run.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 200
    [run] = wait_for([run.pk], timeout=20)
    assert run.status == Run.Status.STOPPED
    assert run.stopped_by == "user"
