"""Tags, metadata and sessions through the JSON API and OTLP."""

from __future__ import annotations

import json

import pytest

from runs.core.models import Run
from tests.projects import project_of
from tracing.store.ingest.writes import token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="test")[1]


@pytest.fixture
def send(client, token):
    def go(method, path, body, token_=token):
        return client.generic(method, path, json.dumps(body), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token_}")

    return go


def test_a_run_is_created_with_tags_metadata_and_session(send):
    response = send("POST", "/api/runs", {"prompt": "p", "tags": ["exp-7", "<b>x</b>"],
                                          "metadata": {"env": "prod", "cfg": {"k": 1}}, "session_id": "chat-1"})
    assert response.status_code == 201, response.content
    run = Run.objects.get()
    assert run.tags == ["exp-7", "<b>x</b>"]
    assert run.metadata == {"env": "prod", "cfg": '{"k": 1}'}
    assert run.session_id == "chat-1"


def test_a_conversation_id_is_the_session(send):
    send("POST", "/api/runs", {"prompt": "p", "conversation_id": "conv-3"})
    assert Run.objects.get().session_id == "conv-3"


def test_a_thousand_tags_are_refused_and_nothing_is_written(send):
    response = send("POST", "/api/runs", {"runs": [{"prompt": "ok"},
                                                   {"prompt": "p", "tags": [f"t{i}" for i in range(1000)]}]})
    assert response.status_code == 400
    assert response.json()["error"] == "runs[1].tags: 1000 tags, at most 64 allowed"
    assert not Run.objects.exists()


def test_patch_adds_removes_and_merges(send):
    run_id = send("POST", "/api/runs", {"prompt": "p", "tags": ["a", "b"], "metadata": {"env": "dev"}}).json()[
        "runs"][0]["id"]
    response = send("PATCH", f"/api/runs/{run_id}/labels",
                    {"add_tags": ["c"], "remove_tags": ["a"], "metadata": {"env": "prod", "v": 2}, "session_id": "s"})
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == ["b", "c"]
    assert response.json()["metadata"] == {"env": "prod", "v": 2}
    run = Run.objects.get()
    assert (run.tags, run.session_id) == (["b", "c"], "s")


@pytest.mark.parametrize(("body", "message"), [
    ({"add_tags": [f"t{i}" for i in range(1000)]}, "1000 tags, at most 64 allowed"),
    ({"tags": "not a list"}, "tags: expected a list of strings"),
    ({"colour": "red"}, "unknown field(s) colour"),
    ([1, 2], "body: expected an object"),
])
def test_a_bad_patch_is_400_and_changes_nothing(send, body, message):
    run_id = send("POST", "/api/runs", {"prompt": "p", "tags": ["keep"]}).json()["runs"][0]["id"]
    response = send("PATCH", f"/api/runs/{run_id}/labels", body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Run.objects.get().tags == ["keep"]


def test_patching_another_users_run_is_404(send, other_user):
    other = token_create(user=other_user, project_id=project_of(other_user).pk, name="b")[1]
    run_id = send("POST", "/api/runs", {"prompt": "p"}, token_=other).json()["runs"][0]["id"]
    assert send("PATCH", f"/api/runs/{run_id}/labels", {"tags": ["x"]}).status_code == 404
    assert send("PATCH", f"/api/runs/{run_id}/labels", {"tags": ["x"]}, token_="nope").status_code == 401


def test_otlp_attributes_become_the_runs_labels(client, token):
    def attr(key, value):
        if isinstance(value, list):
            return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}}}
        return {"key": key, "value": {"stringValue": value}}

    body = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00000000000000aa", "name": "agent",
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
        "attributes": [attr("openinference.span.kind", "AGENT"), attr("input.value", "What is up?"),
                       attr("tag.tags", ["prod", "<i>x</i>"]), attr("metadata", '{"dataset": "hotpot"}'),
                       attr("session.id", "chat-5"), attr("user.id", "u-1")]}]}]}]}
    response = client.generic("POST", "/v1/traces", json.dumps(body), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    run = Run.objects.get()
    assert run.tags == ["prod", "<i>x</i>"]
    assert run.metadata == {"dataset": "hotpot", "user.id": "u-1"}
    assert run.session_id == "chat-5"


def _otlp_attr(key, value):
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


def _post_span(client, token, span_id, attributes, resource=()):
    body = {"resourceSpans": [{"resource": {"attributes": [_otlp_attr("service.name", "svc"), *resource]},
                               "scopeSpans": [{"spans": [{
        "traceId": "5bf92f3577b34da6a3ce929d0e0e4736", "spanId": span_id, "name": "step",
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
        "attributes": attributes}]}]}]}
    response = client.generic("POST", "/v1/traces", json.dumps(body), content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content


def test_resource_labels_and_later_batches_join_the_run(client, token):
    # The SDK sets the session and a tag once on the resource; the agent span,
    # sent in a later batch, brings more tags and metadata.
    llm = [_otlp_attr("openinference.span.kind", "LLM"), _otlp_attr("input.value", "What is up?"),
           _otlp_attr("tag.tags", ["first"])]
    _post_span(client, token, "00000000000000b1", llm,
               resource=[_otlp_attr("session.id", "chat-9"), _otlp_attr("tag.tags", ["from-resource"])])
    run = Run.objects.get()
    assert run.tags == ["first", "from-resource"] and run.session_id == "chat-9"
    later = [_otlp_attr("openinference.span.kind", "AGENT"), _otlp_attr("input.value", "What is up?"),
             _otlp_attr("tag.tags", ["first", "late"]), _otlp_attr("metadata", '{"dataset": "hotpot"}'),
             _otlp_attr("session.id", "other")]
    _post_span(client, token, "00000000000000b2", later)
    run.refresh_from_db()
    assert run.tags == ["first", "from-resource", "late"]
    assert run.metadata == {"dataset": "hotpot"} and run.session_id == "chat-9"  # the first session stays
