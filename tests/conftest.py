from __future__ import annotations

import itertools
from pathlib import Path

import pytest

_counter = itertools.count()
LOCALE = Path(__file__).resolve().parent.parent / "locale"


# The Chinese interface is served from compiled catalogues (.mo, not committed):
# compiled here as `make setup` does, when a .po is newer than its .mo.
@pytest.fixture(scope="session", autouse=True)
def _compiled_translations(request):
    if not request.config.pluginmanager.hasplugin("django"):
        return
    stale = [po for po in LOCALE.glob("*/LC_MESSAGES/*.po")
             if not po.with_suffix(".mo").exists() or po.with_suffix(".mo").stat().st_mtime < po.stat().st_mtime]
    if stale:
        from django.core.management import call_command
        from django.utils.translation import trans_real

        call_command("compilemessages", ignore_patterns=[".venv", "node_modules"], verbosity=0)
        trans_real._translations.clear()  # catalogues read before the compile are read again


# Ingestion hands the analysis of ended runs to a Celery task; tests run it in
# the request so what they assert is there when the response is (a test of the
# task itself turns this off).
@pytest.fixture(autouse=True)
def _ingest_analyse_inline(request):
    if request.config.pluginmanager.hasplugin("django"):  # the pure tests run with -p no:django
        request.getfixturevalue("settings").INGEST_ANALYSE_INLINE = True


# No password: the tests sign in with force_login, and hashing one (PBKDF2, a
# million rounds) costs a third of a second per user.
@pytest.fixture
def project(db):
    from agentlab.projects.models import Project

    # get_or_create: tests.projects.team() may have made it in an earlier fixture.
    return Project.objects.get_or_create(slug="team", defaults={"name": "Team"})[0]


@pytest.fixture
def user(django_user_model, project):
    """alice, the admin of `project` (tests of the roles make their own members)."""
    from agentlab.projects.models import Membership, Role

    alice = django_user_model.objects.create_user("alice")
    Membership.objects.create(user=alice, project=project, role=Role.ADMIN)
    return alice


@pytest.fixture
def other_user(django_user_model):
    """bob, a member of no project."""
    return django_user_model.objects.create_user("bob")


@pytest.fixture
def member(django_user_model, project):
    """member("carol", "viewer"): a user with that role in `project`."""
    from agentlab.projects.models import Membership

    def make(username: str, role: str):
        someone = django_user_model.objects.create_user(username)
        Membership.objects.create(user=someone, project=project, role=role)
        return someone

    return make


@pytest.fixture
def auth_client(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def task(db):
    from runs.core.models import Task

    return Task.objects.create(
        slug="capital-demo", title="Capital demo", prompt="What is the capital of Freedonia?", gold_answer="Fredville"
    )


@pytest.fixture
def make_run(db, task, user, project):
    # Imported here so the Django-free tests can run with `-p no:django`.
    from runs.core.models import Run
    from tracing.core.steps import Step as StepRecord
    from tracing.store.recorder import record_step

    def make(*, steps: int = 0, status: str = "finished", **fields):
        defaults = {"task": task, "prompt": task.prompt, "owner": user, "project": project, "status": status,
                    "seed": next(_counter)}
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


@pytest.fixture(scope="session")
def sim_url():
    """The simulated model as a real HTTP server (a separate process)."""
    from tests.servers import start_sim_server, stop

    proc, url = start_sim_server()
    yield url
    stop(proc)


@pytest.fixture
def worker(transactional_db, sim_url, settings):
    """A real Celery worker process on a queue of its own, on the test database."""
    import uuid

    from django.db import connection

    from tests.servers import start_worker, stop

    queue = f"agentlab-test-{uuid.uuid4().hex[:8]}"
    settings.RUN_QUEUE = queue
    proc = start_worker(db_name=connection.settings_dict["NAME"], queue=queue, env={"SIM_BASE_URL": sim_url})
    yield proc
    stop(proc)


@pytest.fixture
def looping_run(db, user, project):
    """A finished sim run (in-process transport) that rephrases the same empty
    search in circles under the default policy, so the watchdog interrupts it."""
    from django.core.management import call_command

    from runs.agent.sim_server import sim_client
    from runs.core.models import Policy, Task
    from runs.launch import execution, services

    call_command("loaddemo", verbosity=0)
    task = Task.objects.get(slug="tollby-playhouse-seats")
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=0.5, max_steps=12, max_tokens=50_000, seed=3,
                            settings={"sim": {"rephrase": 1.0, "ignore_hint": 0.0, "forget": 0, "early_finish": 0,
                                              "wrong_premise": 0}},
                            policy=Policy.objects.get(project__slug="demo", name="default"))
    return execution.run_execute(run_id=services.run_create(owner=user, project=project, spec=spec).pk,
                                 client=sim_client())
