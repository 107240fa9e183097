"""The 8 causes of a 500 on input of issue 28: each answers a 4xx (or a form
error naming the field), never a 500, and writes nothing half."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agentlab.projects.models import Membership
from runs.approvals.models import Approval
from runs.core.models import Run
from tests.projects import project_of
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

pytestmark = pytest.mark.django_db

HUGE = "7" * 4301


@pytest.fixture
def raw_client():
    """A 500 is a response here, not an exception: what a client would get."""
    return Client(raise_request_exception=False)


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="edges")[1]


# --- one date-range parser for every filter ---------------------------------------------------


@pytest.mark.parametrize("query", [{"until": "9999-12-31"}, {"since": "0001-01-01"}, {"since": "9999-12-31"},
                                   {"until": "0001-01-01"}, {"since": "0001-01-01", "until": "0001-01-02"}])
@pytest.mark.parametrize("path", ["/runs/", "/dashboard/"])
def test_a_day_past_the_calendar_is_a_form_error_naming_the_field(auth_client, path, query):
    response = auth_client.get(path, query)
    assert response.status_code in (200, 400), response.status_code
    errors = response.context["form"].errors
    assert set(errors) & set(query), errors
    assert "a day from 1970-01-01 to 9999-12-30" in response.content.decode()


def test_the_last_and_first_days_still_filter(auth_client, make_run):
    run = make_run(steps=1)
    response = auth_client.get("/runs/", {"since": "1970-01-01", "until": "9999-12-30"})
    assert response.status_code == 200 and run in response.context["runs"]
    response = auth_client.get("/dashboard/", {"since": "9999-12-01", "until": "9999-12-30"})
    assert response.status_code == 200


# --- NUL, surrogates and lengths before Postgres or a library sees them ------------------------


def test_a_nul_session_id_is_a_404(auth_client):
    assert auth_client.get("/runs/session/", {"id": "\x00"}).status_code == 404


def test_a_member_added_by_a_username_with_nul_is_a_form_error(auth_client):
    response = auth_client.post("/projects/members/", {"who": "bob\x00", "role": "viewer"})
    assert response.status_code == 400 and "username: contains a NUL character" in response.content.decode()
    assert Membership.objects.count() == 1


@pytest.mark.parametrize("length", [256, 300, 5000])
def test_a_login_with_a_username_past_its_length_is_a_form_error(raw_client, user, length):
    response = raw_client.post("/accounts/login/", {"username": "u" * length, "password": "x"})
    assert response.status_code == 200
    assert "A username has at most 150 characters." in response.content.decode()
    from axes.models import AccessAttempt

    assert not AccessAttempt.objects.exists()  # the lockout library never saw it


def test_a_login_with_nul_is_a_form_error(raw_client, user):
    response = raw_client.post("/accounts/login/", {"username": "alice\x00", "password": "x"})
    assert response.status_code == 200 and "Null characters are not allowed" in response.content.decode()


@pytest.mark.parametrize("args", ['{"text": "\\ud800"}', '{"text": "a\\udfffb"}', '{"\\ud800": 1}'])
def test_an_approval_edited_with_a_lone_surrogate_escape_is_refused(auth_client, make_run, args):
    from datetime import timedelta

    from django.utils import timezone

    run = make_run(steps=4, status="awaiting")
    approval = Approval.objects.create(run=run, step_index=4, tool="send_message", args={"text": "hi"},
                                       expires_at=timezone.now() + timedelta(hours=1))
    response = auth_client.post(f"/approvals/{approval.pk}/decide/", {"verdict": "edited", "args": args})
    assert response.status_code == 400, response.status_code
    assert "lone UTF-16 surrogate" in response.content.decode()
    assert Approval.objects.get(pk=approval.pk).status == "pending"


# --- OTLP: partial success, never a 500; chunked bodies are read -------------------------------


def _genai_span(span_id: str, arguments: str) -> dict:
    return {"traceId": span_id * 2, "spanId": span_id, "name": "chat gpt-x",
            "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000010000000",
            "attributes": [
                {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                {"key": "llm.model_name", "value": {"stringValue": "gpt-x"}},
                {"key": "llm.output_messages.0.message.role", "value": {"stringValue": "assistant"}},
                {"key": "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                 "value": {"stringValue": "search"}},
                {"key": "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
                 "value": {"stringValue": arguments}}]}


def _otlp(raw_client, token, spans: list[dict], **extra):
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
    return raw_client.generic("POST", "/v1/traces", body, content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


@pytest.mark.parametrize("arguments", ['{"n": ' + HUGE + "}", "[" * 5000 + "]" * 5000, "[" * 900 + "]" * 900])
def test_an_otlp_span_with_unreadable_arguments_is_stored_with_them_as_text(raw_client, token, arguments):
    response = _otlp(raw_client, token, [_genai_span("00000000000000a1", arguments),
                                         _genai_span("00000000000000b2", '{"q": "ok"}')])
    assert response.status_code == 200, response.content[:300]
    assert Run.objects.count() == 2
    step = Step.objects.get(kind="action", run__settings__trace_id="00000000000000a1" * 2)
    assert isinstance(step.args, str) and step.args == arguments


def test_a_trace_whose_mapping_fails_is_rejected_as_a_partial_success(raw_client, token, monkeypatch):
    from tracing.store.ingest import services

    real = services._trace_steps

    def picky(ext, new, state):
        if any(span.span_id == "00000000000000a1" for span in new):
            raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")
        return real(ext, new, state)

    monkeypatch.setattr(services, "_trace_steps", picky)
    response = _otlp(raw_client, token, [_genai_span("00000000000000a1", "{}"),
                                         _genai_span("00000000000000b2", "{}")])
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "could not be read" in partial["errorMessage"]
    assert Step.objects.filter(run__settings__trace_id="00000000000000b2" * 2).exists()


def test_an_otlp_batch_failing_past_the_trace_guard_is_a_partial_success_in_protobuf(raw_client, token,
                                                                                      monkeypatch):
    from tracing.store.ingest import services

    def broken(**kwargs):
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    monkeypatch.setattr(services, "otlp_ingest", broken)
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "x"
    response = raw_client.generic("POST", "/v1/traces", request.SerializeToString(),
                                  content_type="application/x-protobuf", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    reply = ExportTraceServiceResponse.FromString(response.content)
    assert reply.partial_success.rejected_spans == 1 and "could not be read" in reply.partial_success.error_message


def test_a_chunked_otlp_body_without_a_length_is_read(raw_client, token):
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [_genai_span("00000000000000c3", "{}")]}]}]})
    # What gunicorn hands over for Transfer-Encoding: chunked: the de-chunked input, no CONTENT_LENGTH.
    response = raw_client.generic("POST", "/v1/traces", b"", content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_TRANSFER_ENCODING="chunked",
                                  CONTENT_TYPE="application/json", **{"wsgi.input": io.BytesIO(body.encode()), "wsgi.input_terminated": True})
    assert response.status_code == 200, response.content
    assert Run.objects.filter(source="otlp").count() == 1


def test_a_chunked_body_on_a_server_that_cannot_dechunk_is_411(raw_client, token):
    response = raw_client.generic("POST", "/api/runs", b"", content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_TRANSFER_ENCODING="chunked",
                                  CONTENT_TYPE="application/json")
    assert response.status_code == 411 and "Content-Length" in response.json()["error"]
