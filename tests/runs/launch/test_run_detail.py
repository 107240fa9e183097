from __future__ import annotations

import json

import pytest
from django.urls import reverse

from runs.launch.models import Run
from tracing.recorder import record_step
from tracing.steps import Step as StepRecord

pytestmark = pytest.mark.django_db


def test_it_requires_login(client, make_run):
    run = make_run(steps=3)
    assert client.get(reverse("runs:detail", args=[run.pk])).status_code == 302
    assert client.get(reverse("runs:steps", args=[run.pk])).status_code == 302


def test_unknown_run_is_404(auth_client):
    assert auth_client.get(reverse("runs:detail", args=[999999])).status_code == 404
    assert auth_client.get(reverse("runs:steps", args=[999999])).status_code == 404


def test_it_shows_every_step_with_index_kind_tool_args(auth_client, make_run):
    run = make_run(steps=6)
    body = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    for i in range(6):
        assert f'id="step-{i}"' in body
    assert "tag-thought" in body and "tag-action" in body and "tag-observation" in body
    assert "{&quot;query&quot;: &quot;q1&quot;}" in body


def test_untrusted_step_text_is_escaped(auth_client, make_run):
    run = make_run(steps=0)
    record_step(run.pk, StepRecord(index=0, kind="observation", text="<script>alert('x')</script>",
                                   tool="search", args={"q": "<img src=x onerror=alert(1)>"}))
    body = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "<script>alert(" not in body
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body
    assert "<img src=x" not in body


def test_the_page_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    run = make_run(steps=300)
    # 1 session, 2 user, 3 run with task, 4 first page of steps
    with django_assert_num_queries(4):
        response = auth_client.get(reverse("runs:detail", args=[run.pk]))
    assert len(response.context["steps"]) == 200
    assert 'hx-trigger="revealed"' in response.content.decode()


def test_poll_returns_only_steps_after_the_cursor(auth_client, make_run):
    run = make_run(steps=5, status=Run.Status.RUNNING)
    response = auth_client.get(reverse("runs:steps", args=[run.pk]), {"after": 2}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="step-3"' in body and 'id="step-4"' in body and 'id="step-2"' not in body
    assert "after=4" in body  # the next poll continues from the last step
    assert 'hx-trigger="every 1s"' in body


def test_poll_stops_when_the_run_is_over_and_nothing_is_new(auth_client, make_run):
    run = make_run(steps=3, status=Run.Status.FINISHED)
    response = auth_client.get(reverse("runs:steps", args=[run.pk]), {"after": 2}, headers={"HX-Request": "true"})
    assert response.status_code == 286
    assert 'id="run-header"' in response.content.decode()


def test_poll_with_a_bad_cursor_is_400(auth_client, make_run):
    run = make_run(steps=1)
    response = auth_client.get(reverse("runs:steps", args=[run.pk]), {"after": "x"})
    assert response.status_code == 400


def test_export_is_the_eval_jsonl_format(auth_client, make_run):
    run = make_run(steps=4, final_answer="Fredville", success=True)
    response = auth_client.get(reverse("runs:export", args=[run.pk]))
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert data["run_id"] == str(run.pk)
    assert data["success"] is True
    assert [s["index"] for s in data["steps"]] == [0, 1, 2, 3]
    assert data["steps"][1] == {**data["steps"][1], "kind": "action", "tool": "search", "args": {"query": "q1"}}
    assert data["meta"]["gold_answer"] == "Fredville"

    from tracing.steps import trajectory_from_dict

    assert len(trajectory_from_dict(data).steps) == 4
