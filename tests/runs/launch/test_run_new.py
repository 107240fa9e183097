from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.models import Run, Task

pytestmark = pytest.mark.django_db
URL = reverse("runs:new")


def form(task: Task, **overrides) -> dict:
    data = {"task": task.slug, "provider": "sim", "mode": "tools", "temperature": 0.7, "max_steps": 10,
            "max_tokens": 20000, "reruns": 1}
    data.update(overrides)
    return data


@pytest.fixture
def queued(monkeypatch):
    """Captures what would go to the broker (the real path is tests/runs/test_worker.py)."""
    sent = []
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda args, **kw: sent.append((args, kw)))
    return sent


def test_it_requires_login(client):
    assert client.get(URL).status_code == 302
    assert client.post(URL, {}).status_code == 302


def test_the_form_offers_tasks_models_and_policies(auth_client, task):
    body = auth_client.get(URL).content.decode()
    assert task.slug in body and "simulated" in body and "Gemma 3 270M" in body


def test_an_unknown_task_is_404(auth_client):
    assert auth_client.get(URL, {"task": "no-such-task"}).status_code == 404


def test_a_valid_post_queues_one_run_and_redirects_to_it(auth_client, task, queued):
    response = auth_client.post(URL, form(task, seed=5, sim_forget=0.2, fault_timeout=0.1))
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert run.status == "queued" and run.seed == 5 and run.prompt == task.prompt
    assert run.settings["sim"]["forget"] == 0.2 and run.settings["faults"] == {"timeout": 0.1}
    assert queued == [((run.pk,), {"task_id": run.celery_id, "queue": "agentlab-runs", "retry": False})] or \
        queued[0][0] == (run.pk,)


def test_reruns_make_a_group_with_distinct_seeds(auth_client, task, queued):
    response = auth_client.post(URL, form(task, reruns=5, seed=100))
    runs = list(Run.objects.order_by("pk"))
    # They land on their comparison, which polls while they run (tests/runs/launch/test_live_list.py).
    assert response["Location"] == reverse("compare:group", args=[runs[0].group_id])
    assert [r.seed for r in runs] == [100, 101, 102, 103, 104]
    assert len({r.group_id for r in runs}) == 1 and len(queued) == 5


@pytest.mark.parametrize(("field", "value", "message"), [
    ("max_steps", 0, "greater than or equal to 1"),
    ("max_steps", 201, "less than or equal to 200"),
    ("reruns", 0, "greater than or equal to 1"),
    ("reruns", 51, "less than or equal to 50"),
    ("temperature", -0.1, "greater than or equal to 0"),
    ("temperature", 2.5, "less than or equal to 2"),
    ("fault_junk", 1.5, "less than or equal to 1"),
])
def test_out_of_bounds_values_get_a_clear_message_and_queue_nothing(auth_client, task, queued, field, value, message):
    response = auth_client.post(URL, form(task, **{field: value}))
    assert response.status_code == 400
    assert message in response.content.decode()
    assert Run.objects.count() == 0 and queued == []


def test_edge_values_are_accepted(auth_client, task, queued):
    assert auth_client.post(URL, form(task, max_steps=1, temperature=0)).status_code == 302
    assert auth_client.post(URL, form(task, max_steps=200, temperature=2)).status_code == 302


def test_faults_adding_up_to_more_than_one_are_refused(auth_client, task, queued):
    response = auth_client.post(URL, form(task, fault_timeout=0.6, fault_empty=0.6))
    assert response.status_code == 400 and "add up to more than 1" in response.content.decode()


def test_the_local_model_runs_in_text_mode_whatever_the_form_said(auth_client, task, queued):
    """issue 16, item 9: the local model works in text mode only; a form sent
    with Tools (no script ran) still starts a run that works."""
    response = auth_client.post(URL, form(task, provider="local", mode="tools"))
    assert response.status_code == 302
    run = Run.objects.get()
    assert run.provider == "local" and run.mode == "text"
    assert len(queued) == 1


def test_a_free_prompt_needs_text(auth_client, task, queued):
    response = auth_client.post(URL, {**form(task), "task": "", "prompt": "  "})
    assert "Pick a task or type a prompt" in response.content.decode()
    assert Run.objects.count() == 0


def test_redis_down_the_form_says_so_and_leaves_no_orphan_run(auth_client, task, monkeypatch):
    from kombu.exceptions import OperationalError

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", refuse)
    response = auth_client.post(URL, form(task, reruns=3))
    assert response.status_code == 400
    body = response.content.decode()
    assert "queue (Redis) is unavailable" in body and "Nothing was queued" in body
    assert Run.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_with_a_real_dead_broker_the_launch_fails_fast_and_cleans_up(task):
    """No mock: a process whose broker URL points at a closed port."""
    import os
    import subprocess
    import sys
    import time

    from django.db import connection

    from tests.servers import ROOT

    script = (
        "import django; django.setup()\n"
        "from runs.launch import services\nfrom runs.core.models import Task\nfrom runs.core.queue import QueueUnavailable\n"
        "from tests.projects import team\n"
        f"t = Task.objects.get(slug={task.slug!r})\n"
        "spec = services.RunSpec(task=t, prompt=t.prompt, provider='sim', model_name='sim', mode='tools',"
        " temperature=0, max_steps=5, max_tokens=1000)\n"
        "try:\n    services.runs_launch(owner=None, project=team(), spec=spec, reruns=3)\n"
        "except QueueUnavailable as exc:\n    print('UNAVAILABLE', exc)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agentlab.settings", "DB_NAME": connection.settings_dict["NAME"],
           "REDIS_URL": "redis://127.0.0.1:9/0"}
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "UNAVAILABLE" in out.stdout, out.stderr[-2000:]
    assert time.monotonic() - started < 30
    assert Run.objects.count() == 0
