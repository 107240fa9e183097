"""tracing/client.py guarded (Client.run(guard=...)) against a running agentlab."""

from __future__ import annotations

import pytest

from runs.core.models import Run
from tests.projects import project_of
from tracing.client import Client, StopRun
from tracing.core.analysis import REPLAYED_KEY
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

pytestmark = pytest.mark.django_db(transaction=True)
TASK = "What is the population of Calder Bay?"


@pytest.fixture
def client_(live_server, user):
    return Client(live_server.url, token_create(user=user, project_id=project_of(user).pk, name="client")[1],
                  retries=1, backoff=0.01)


def looping_agent(run, turns: int = 10, hints: list | None = None) -> list[str | None]:
    """The same search again and again; `hints` gets the hint it had in hand before each call."""
    hints = [] if hints is None else hints
    run.thought("I will search for it.")
    for _ in range(turns):
        hints.append(run.pending_hint())
        run.action("search", "same query")
        run.observation("No results.", tool="search")
    return hints


def test_a_guarded_loop_gets_a_hint_then_a_stop_it_can_catch(client_):
    with client_.run(TASK, guard=True) as run:
        hints: list = []
        with pytest.raises(StopRun) as stop:
            looping_agent(run, hints=hints)
        run.final(f"Stopped: {stop.value.text}")
    # The hint was there for the next prompt, once.
    given = [h for h in hints if h]
    assert given and "already called search" in given[0]
    assert stop.value.detector == "repetition" and stop.value.decision["tier"] == "stop"
    assert [d["tier"] for d in run.decisions][-1] == "stop" and run.decisions[0]["tier"] == "hint"
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.stopped_by) == ("stopped", "watchdog")
    assert stored.final_answer.startswith("Stopped: Stopped by the watchdog")


def test_a_stop_left_uncaught_ends_the_block_stopped(client_):
    with pytest.raises(StopRun), client_.run(TASK, guard=True) as run:
        looping_agent(run)
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.stopped_by) == ("stopped", "watchdog")


def test_shadow_mode_records_decisions_and_changes_nothing(client_):
    with client_.run(TASK, guard="observe") as run:
        hints = looping_agent(run)
        run.final("I could not find it.")
    assert hints == [None] * len(hints) and run.stop is None
    assert [d["tier"] for d in run.decisions][-1] == "stop"
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.final_answer) == ("finished", "I could not find it.")
    marks = [s.meta[REPLAYED_KEY] for s in Step.objects.filter(run=stored) if REPLAYED_KEY in s.meta]
    assert marks and all(m["shadow"] for m in marks)


def test_a_client_that_never_asks_loses_nothing(client_):
    with client_.run(TASK) as run:
        hints = looping_agent(run)
        run.final("I could not find it.")
    assert hints == [None] * len(hints) and run.decisions == []
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.step_count) == ("finished", 22)


def test_a_bad_guard_value_is_refused_before_sending(client_):
    with pytest.raises(ValueError, match="guard"):
        client_.run(TASK, guard="yes")
