from __future__ import annotations

import pytest

from runs.agent.sim_server import sim_client
from runs.core.models import Run
from runs.launch import execution, services
from tests.projects import team
from tracing.store.models import Step

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(looping_run):
    return looping_run


def test_a_fork_at_an_interruption_continues_without_it_and_copies_nothing(finished_run, user):
    hint = Step.objects.filter(run=finished_run, kind="intervention").order_by("index").first()
    assert hint is not None, "the default policy should have hinted at the repeated empty search"
    fork = services.fork_create(parent=finished_run, fork_from=hint.index, owner=user, enqueue=False)
    assert not Step.objects.filter(run=fork).exists()  # nothing copied
    fork = execution.run_execute(run_id=fork.pk, client=sim_client())
    own = list(Step.objects.filter(run=fork).order_by("index"))
    assert own[0].index == hint.index  # numbering continues where the parent's steps stop
    assert fork.status == "finished"
    assert fork.success is not None
    assert fork.policy is None  # watchdog off
    history = services.run_history(fork)
    assert [s.index for s in history] == list(range(len(history)))
    assert not any(s.kind == "intervention" for s in history[: hint.index])
    # The budget is the history's turns plus the fork's five.
    assert fork.max_steps == sum(1 for s in history[: hint.index] if s.completion_tokens) + 5


def test_a_fork_with_an_edited_observation_starts_from_the_edit(finished_run, user):
    obs = Step.objects.filter(run=finished_run, kind="observation").order_by("index").first()
    fork = services.fork_create(parent=finished_run, fork_from=obs.index, owner=user, enqueue=False,
                                edit={"text": "[1] Tollby Quarry Playhouse (doc:tollby-quarry-playhouse)\nIt has 640 seats."})
    first = Step.objects.get(run=fork, index=obs.index)
    assert first.meta["edited"] is True and "640 seats" in first.text
    fork = execution.run_execute(run_id=fork.pk, client=sim_client())
    assert fork.status == Run.Status.FINISHED


def test_fork_from_step_zero_and_from_the_end(finished_run, user):
    zero = services.fork_create(parent=finished_run, fork_from=0, owner=user, enqueue=False)
    zero = execution.run_execute(run_id=zero.pk, client=sim_client())
    assert zero.status == "finished"
    end = finished_run.step_count
    last = services.fork_create(parent=finished_run, fork_from=end, owner=user, enqueue=False)
    last = execution.run_execute(run_id=last.pk, client=sim_client())
    # Continuing after the final answer: the model sees a finished trajectory and answers again.
    assert last.status == "finished"


def test_bad_forks_are_refused(finished_run, user):
    with pytest.raises(services.ForkError, match="no step"):
        services.fork_create(parent=finished_run, fork_from=999, owner=user, enqueue=False)
    with pytest.raises(services.ForkError, match="turns"):
        services.fork_create(parent=finished_run, fork_from=1, turns=0, owner=user, enqueue=False)
    action = Step.objects.filter(run=finished_run, kind="action").first()
    with pytest.raises(services.ForkError, match="observation or a thought"):
        services.fork_create(parent=finished_run, fork_from=action.index, edit={"text": "x"}, enqueue=False)
    live = Run.objects.create(project=team(), prompt="x", status="running")
    with pytest.raises(services.ForkError, match="still going"):
        services.fork_create(parent=live, fork_from=0, enqueue=False)


def test_a_fork_of_a_dead_endpoint_ends_in_error(finished_run, user):
    Run.objects.filter(pk=finished_run.pk).update(base_url="http://127.0.0.1:9/v1")
    finished_run.refresh_from_db()
    fork = services.fork_create(parent=finished_run, fork_from=2, owner=user, enqueue=False)
    fork = execution.run_execute(run_id=fork.pk)
    assert fork.status == Run.Status.ERROR
    assert "connect" in Step.objects.filter(run=fork).order_by("-index").first().text.lower()


def test_the_fork_page_shows_the_inherited_steps(finished_run, user, auth_client):
    fork = services.fork_create(parent=finished_run, fork_from=4, owner=user, enqueue=False)
    execution.run_execute(run_id=fork.pk, client=sim_client())
    body = auth_client.get(fork.get_absolute_url()).content.decode()
    assert f"run <a href=\"/runs/{finished_run.pk}/\">{finished_run.pk}</a>" in body
    assert 'id="step-0"' in body and 'id="step-4"' in body


def test_the_run_page_says_whether_the_agent_changed_course_after_a_hint(looping_run, auth_client):
    hint = Step.objects.filter(run=looping_run, kind="intervention", meta__tier="hint").first()
    assert hint.meta["course"]["changed"] is True  # the sim obeys hints (ignore_hint=0)
    body = auth_client.get(looping_run.get_absolute_url()).content.decode()
    assert "changed course ✓" in body
