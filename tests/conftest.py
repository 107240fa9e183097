from __future__ import annotations

import itertools

import pytest

_counter = itertools.count()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw")


@pytest.fixture
def auth_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def task(db):
    from runs.models import Task

    return Task.objects.create(
        slug="capital-demo", title="Capital demo", prompt="What is the capital of Freedonia?", gold_answer="Fredville"
    )


@pytest.fixture
def make_run(db, task, user):
    # Imported here so the Django-free tests can run with `-p no:django`.
    from runs.models import Run
    from tracing.recorder import record_step
    from tracing.steps import Step as StepRecord

    def make(*, steps: int = 0, status: str = "succeeded", **fields):
        defaults = {"task": task, "prompt": task.prompt, "owner": user, "status": status, "seed": next(_counter)}
        defaults.update(fields)
        run = Run.objects.create(**defaults)
        kinds = ("thought", "action", "observation")
        for i in range(steps):
            kind = kinds[i % 3]
            record_step(
                run.pk,
                StepRecord(
                    index=i,
                    kind=kind,
                    text=f"{kind} number {i}",
                    tool="search" if kind != "thought" else None,
                    args={"query": f"q{i}"} if kind == "action" else None,
                    meta={"status": "ok"} if kind == "observation" else {},
                    prompt_tokens=10,
                    completion_tokens=2,
                    latency_ms=5.0,
                ),
            )
        run.refresh_from_db()
        return run

    return make
