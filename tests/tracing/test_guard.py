"""The step API's guard (tracing.store.guard): the watchdog answers an agent that runs elsewhere."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentlab.projects.models import Membership, Project, Role
from runs.core.models import Run
from tests.projects import project_of
from tests.tracing.helpers import act, loop_run, obs, thought
from tracing.core.analysis import REPLAYED_KEY
from tracing.core.replay import replay
from tracing.core.steps import Step as StepRecord
from tracing.core.watchdog import DEFAULT_POLICY
from tracing.store.guard import NOT_GUARDED, guard_stops_expire
from tracing.store.ingest.writes import token_create
from tracing.store.models import GuardState, Step

pytestmark = pytest.mark.django_db
PROMPT = "What is the population of Calder Bay?"


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="test")[1]


@pytest.fixture
def api(client, token):
    class Api:
        def post(self, path, body, token_=token):
            return client.generic("POST", path, json.dumps(body), content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token_}")

        def steps(self, run_id, steps, status=200):
            response = self.post(f"/api/runs/{run_id}/steps", {"steps": [as_json(s) for s in steps]})
            assert response.status_code == status, response.content
            return response.json()

    return Api()


def as_json(step: StepRecord) -> dict:
    return {"index": step.index, "kind": step.kind, "text": step.text, "tool": step.tool, "args": step.args,
            "meta": step.meta}


def looping() -> list[StepRecord]:
    return [thought(0, "I will search for it."), *loop_run(10, text="No results.", start=1)]


def create(api, guard=True, **fields) -> int:
    response = api.post("/api/runs", {"prompt": PROMPT, "model": "m", "guard": guard, **fields})
    assert response.status_code == 201, response.content
    return response.json()["runs"][0]["id"]


def built_in(steps: list[StepRecord]) -> list[dict]:
    """What the built-in path decides over the same trajectory (the same Watchdog, one process)."""
    done = replay(steps, goal=PROMPT, policy=DEFAULT_POLICY)
    return [{"tier": iv["tier"], "detector": iv["detector"], "evidence": iv["evidence"], "step": iv["step"]}
            for iv in done.interventions]


def test_a_loop_gets_the_built_in_decisions_step_by_step_and_is_stopped_at_the_same_step(api):
    run_id = create(api)
    steps = looping()
    got = []
    for step in steps:
        body = api.steps(run_id, [step])
        assert body["guard"] == "act"
        if body["decision"] != "none":
            got.append(body["decision"])
        if body["decision"] != "none" and body["decision"]["tier"] == "stop":
            break
    expected = built_in(steps)
    assert [{k: d[k] for k in ("tier", "detector", "evidence", "step")} for d in got] == expected
    assert [d["tier"] for d in got][-1] == "stop"
    wd = replay(steps, goal=PROMPT).watchdog
    assert [d["text"] for d in got] == [iv.message for _, iv in wd.interventions]

    # Recorded as the run's interventions, marked as sent to the agent.
    run = Run.objects.get(pk=run_id)
    assert run.intervention_count == len(got) and "repetition" in run.intervention_detectors
    marked = {s.index: s.meta[REPLAYED_KEY] for s in Step.objects.filter(run=run) if REPLAYED_KEY in s.meta}
    assert sorted(marked) == [d["step"] for d in got]
    assert all(m["sent_to_agent"] is True and m["shadow"] is False for m in marked.values())
    assert run.status == "running"  # until the agent acknowledges


def test_one_batch_and_step_by_step_decide_the_same(api):
    steps = looping()
    whole = api.steps(create(api), steps)
    assert whole["decision"]["tier"] == "stop"
    assert [d["step"] for d in whole["decisions"]] == [d["step"] for d in built_in(steps)]


def test_the_next_request_acknowledges_a_stop_and_ends_the_run_stopped_by_the_watchdog(api):
    run_id = create(api)
    steps = looping()
    stop = api.steps(run_id, steps)["decision"]
    last = steps[-1].index
    fallback = StepRecord(index=last + 1, kind="final", text="I could not find it.")
    body = api.steps(run_id, [fallback])
    assert body["decision"] == "none" and "acknowledged" in body["decision_reason"]
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.stopped_by, run.success) == ("stopped", "watchdog", None)
    assert run.final_answer == "I could not find it." and f"at step {stop['step']}" in run.reason
    # The fallback is kept; the run's analysis keeps the mark on the stop.
    assert Step.objects.filter(run=run, index=last + 1).exists()
    stopped = Step.objects.get(run=run, index=stop["step"])
    assert stopped.meta[REPLAYED_KEY]["tier"] == "stop" and stopped.meta[REPLAYED_KEY]["sent_to_agent"] is True
    # Its finish after that is the echo of the stop, not a conflict.
    response = api.post(f"/api/runs/{run_id}/finish", {"status": "finished", "final_answer": "x"})
    assert response.status_code == 200 and response.json()["status"] == "stopped"
    # And a guard on a finished run answers none, saying why.
    body = api.steps(run_id, [])
    assert body["decision"] == "none" and "has ended (stopped" in body["decision_reason"]


def test_a_finish_after_a_stop_ends_the_run_stopped(api):
    run_id = create(api)
    api.steps(run_id, looping())
    response = api.post(f"/api/runs/{run_id}/finish", {"status": "finished", "success": True})
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["success"]) == ("stopped", None)
    assert Run.objects.get(pk=run_id).stopped_by == "watchdog"


def test_an_agent_silent_after_a_stop_is_stopped_by_the_sweep(api, settings):
    run_id = create(api)
    api.steps(run_id, looping())
    assert guard_stops_expire() == []  # within GUARD_STOP_TIMEOUT_S
    settings.GUARD_STOP_TIMEOUT_S = 0
    assert guard_stops_expire() == [run_id]
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.stopped_by) == ("stopped", "watchdog") and "silent" in run.reason


def test_shadow_mode_records_the_decisions_and_acts_on_none(api):
    run_id = create(api, guard="observe")
    steps = looping()
    body = api.steps(run_id, steps)
    assert body["guard"] == "observe" and body["decision"]["tier"] == "stop"
    api.steps(run_id, [StepRecord(index=steps[-1].index + 1, kind="thought", text="going on")])
    run = Run.objects.get(pk=run_id)
    assert run.status == "running" and run.intervention_count == len(built_in(steps))
    marks = [s.meta[REPLAYED_KEY] for s in Step.objects.filter(run=run) if REPLAYED_KEY in s.meta]
    assert marks and all(m["shadow"] is True and m["sent_to_agent"] is False for m in marks)
    assert GuardState.objects.get(run_id=run_id).stop is None


def test_a_resent_batch_is_not_judged_twice(api):
    run_id = create(api)
    steps = looping()[:6]
    first = api.steps(run_id, steps)
    again = api.steps(run_id, steps)
    assert again["duplicates"] == len(steps) and again["decision"] == "none"
    assert first["decision"] != "none"
    assert Run.objects.get(pk=run_id).intervention_count == len(built_in(steps))


def test_steps_sent_with_the_new_run_are_judged_too(api):
    response = api.post("/api/runs", {"prompt": PROMPT, "guard": True, "steps": [as_json(s) for s in looping()]})
    created = response.json()["runs"][0]
    assert created["guard"] == "act" and created["decision"]["tier"] == "stop"
    assert created["steps_written"] == len(looping())


def test_an_unguarded_run_says_so(api):
    run_id = create(api, guard=False)
    body = api.steps(run_id, looping())
    assert (body["guard"], body["decision"], body["decision_reason"]) == ("off", "none", NOT_GUARDED)
    assert not GuardState.objects.filter(run_id=run_id).exists()


def test_a_bad_guard_value_is_refused(api):
    response = api.post("/api/runs", {"prompt": PROMPT, "guard": "yes"})
    assert response.status_code == 400 and "guard" in response.json()["error"]


def test_another_projects_run_is_a_404(api, django_user_model):
    carol = django_user_model.objects.create_user("carol")
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(user=carol, project=other, role=Role.ADMIN)
    _, other_token = token_create(user=carol, project_id=other.pk, name="other")
    run_id = create(api)
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": [as_json(thought(0, "hi"))]}, token_=other_token)
    assert response.status_code == 404


def test_the_cost_of_a_batch_does_not_grow_with_the_run(api):
    run_id = create(api)
    i = 0

    def turn(n: int) -> list[StepRecord]:
        nonlocal i
        out = [act(i, "search", f"item {n}"), obs(i + 1, f"item {n} has {n * 13} parts, colour {n % 97}", "search")]
        i += 2
        return out

    for n in range(40):
        api.steps(run_id, turn(n))
    with CaptureQueriesContext(connection) as early:
        api.steps(run_id, turn(40))
    for n in range(41, 160):
        api.steps(run_id, turn(n))
    with CaptureQueriesContext(connection) as late:
        api.steps(run_id, turn(160))
    # The same statements at turn 40 and turn 160: token, lock, guard state,
    # one memo lookup per observation (and per valid result), memo insert,
    # state update, the steps, the summary.
    assert len(late.captured_queries) == len(early.captured_queries), [q["sql"][:80] for q in late.captured_queries]
    state = GuardState.objects.get(run_id=run_id).state
    assert len(json.dumps(state)) < 20_000


def test_the_openapi_description_documents_the_guard(client):
    spec = client.get("/api/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert "guard" in schemas["RunIn"]["properties"]
    decision = schemas["StepsOut"]["properties"]["decision"]
    assert {"const": "none"} in decision["oneOf"]
    assert decision["oneOf"][1]["properties"]["tier"]["enum"] == ["hint", "redirect", "stop"]
