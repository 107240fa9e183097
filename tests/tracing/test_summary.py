"""The run-summary rule (tracing.core.summary), and every writer of steps applying it."""

from __future__ import annotations

import json

import pytest

from runs.core.run_rows import summary_columns
from tests.projects import project_of
from tracing.core.steps import Step
from tracing.core.summary import RunSummary

SUMMARY_COLUMNS = ("step_count", "prompt_tokens", "completion_tokens", "latency_ms", "intervention_count",
                   "intervention_detectors", "intervention_tiers", "context_steps", "context_tokens",
                   "truncated_steps")

# A model turn with a prompt size, a truncated observation, two interventions of
# one detector and one of another, a step without tokens.
STEPS = [
    Step(0, "thought", "I should search.", prompt_tokens=120, completion_tokens=12, latency_ms=30.0),
    Step(1, "action", "", tool="search", args={"query": "q"}),
    Step(2, "observation", "a long page", tool="search", meta={"status": "ok", "truncated": True}),
    Step(3, "intervention", "hint", meta={"detector": "repetition", "tier": "hint"}),
    Step(4, "thought", "Again.", prompt_tokens=260, completion_tokens=8, latency_ms=20.0),
    Step(5, "intervention", "redirect", meta={"detector": "repetition", "tier": "redirect"}),
    Step(6, "intervention", "stop", meta={"tier": "stop"}),
    Step(7, "observation", "short", tool="search", meta={"status": "ok"}, prompt_tokens=-5),
]


def test_the_summary_of_steps():
    summary = RunSummary.of(STEPS)
    assert summary_columns(summary) == {
        "step_count": 8, "prompt_tokens": 380, "completion_tokens": 20, "latency_ms": 50.0,
        "intervention_count": 3, "intervention_detectors": ["repetition", "watchdog"],
        "intervention_tiers": ["hint", "redirect", "stop"],
        "context_steps": [0, 4], "context_tokens": [120, 260], "truncated_steps": [2],
    }


def test_summaries_add_up_step_by_step():
    one_by_one = RunSummary()
    for step in STEPS:
        one_by_one.add(step)
    assert one_by_one == RunSummary.of(STEPS)


def test_an_empty_summary_zeroes_every_column():
    assert summary_columns(RunSummary()) == {name: ([] if name.startswith(("intervention_d", "intervention_t", "context",
                                                                    "truncated")) else 0)
                                      for name in SUMMARY_COLUMNS}


def _columns(run):
    run.refresh_from_db()
    return {name: getattr(run, name) for name in SUMMARY_COLUMNS}


def _api_steps():
    return [{"index": s.index, "kind": s.kind, "text": s.text, "tool": s.tool, "args": s.args, "meta": s.meta,
             "prompt_tokens": max(0, s.prompt_tokens), "completion_tokens": s.completion_tokens,
             "latency_ms": s.latency_ms} for s in STEPS]


@pytest.fixture
def expected():
    return summary_columns(RunSummary.of(STEPS))


@pytest.mark.django_db
def test_the_recorder_keeps_the_summary(make_run, expected):
    from tracing.store.recorder import record_step

    run = make_run()
    for step in STEPS:
        record_step(run.pk, step)
    record_step(run.pk, STEPS[3])  # a re-delivered step adds nothing
    assert _columns(run) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["create", "append", "append-copy"])
def test_ingested_runs_get_the_same_summary_context_pressure_included(client, user, expected, path, monkeypatch):
    from runs.core.models import Run
    from tracing.store.ingest import writes
    from tracing.store.ingest.writes import token_create

    if path == "append-copy":
        monkeypatch.setattr(writes, "COPY_MIN_ROWS", 2)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_create(user=user, project_id=project_of(user).pk, name='t')[1]}"}
    body = {"prompt": "What is the capital of Freedonia?", "model": "m"}
    if path == "create":
        body["steps"] = _api_steps()
    response = client.post("/api/runs", json.dumps(body), content_type="application/json", **headers)
    run = Run.objects.get(pk=response.json()["runs"][0]["id"])
    if path != "create":
        response = client.post(f"/api/runs/{run.pk}/steps", json.dumps({"steps": _api_steps()}),
                               content_type="application/json", **headers)
        assert response.status_code == 200, response.content
    assert _columns(run) == expected


@pytest.mark.django_db
def test_imported_runs_get_the_same_summary(user):
    from runs.core.models import Run
    from runs.imports.services import import_lines
    from tracing.core.steps import trajectory_from_dict

    line = {"source": "test", "run_id": "r1", "task": "What is the capital of Freedonia?", "success": None,
            "steps": [{"content": s.pop("text"), **s} for s in _api_steps()]}
    result = import_lines([json.dumps(line)], project_id=project_of(user).pk, owner=user)
    assert result.ok, result.errors
    # The JSONL format carries no token counts: the rule is applied to what it carries.
    expected = summary_columns(RunSummary.of(trajectory_from_dict(line).steps))
    assert expected["intervention_detectors"] == ["repetition", "watchdog"] and expected["truncated_steps"] == [2]
    assert _columns(Run.objects.get(pk=result.run_ids[0])) == expected
