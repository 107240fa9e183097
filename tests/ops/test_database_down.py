"""While Postgres is unreachable every entry point answers 503 with Retry-After
(issue 28): JSON for the API and OTLP, a plain page for people.

The test points the connection at a closed port (what a stopped Postgres
looks like to a client), sends what each kind of client sends, then points it
back.
"""

from __future__ import annotations

import socket

import pytest
from django.db import OperationalError, connection

from agentlab.unavailable import RETRY_AFTER_S
from tests.projects import project_of
from tracing.store.ingest.writes import token_create

pytestmark = pytest.mark.django_db(transaction=True)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends


@pytest.fixture
def database_down():
    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = _closed_port()

    def back_up() -> None:
        connection.close()
        connection.settings_dict["PORT"] = port

    try:
        yield back_up
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port
        connection.ensure_connection()


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="outage")[1]


def test_the_closed_port_really_is_down(database_down):
    with pytest.raises(OperationalError):
        connection.ensure_connection()


@pytest.mark.parametrize(("method", "path", "content_type"), [
    ("POST", "/v1/traces", "application/x-protobuf"),
    ("POST", "/v1/traces", "application/json"),
    ("POST", "/api/runs", "application/json"),
    ("GET", "/api/runs/1", ""),
])
def test_the_api_and_otlp_answer_503_json(client, token, database_down, method, path, content_type):
    response = client.generic(method, path, b"{}", content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 503
    assert response["Retry-After"] == str(RETRY_AFTER_S)
    assert response["Content-Type"] == "application/json"
    assert "database" in response.json()["error"]


@pytest.mark.parametrize("path", ["/runs/", "/dashboard/", "/runs/1/", "/runs/1/steps/", "/deletions/"])
def test_pages_answer_503_with_a_plain_page(auth_client, database_down, path):
    # Signed in before the outage: the session and the user are in the database.
    response = auth_client.get(path)
    assert response.status_code == 503 and response["Retry-After"] == str(RETRY_AFTER_S)
    assert response["Content-Type"].startswith("text/html") and b"database cannot be reached" in response.content


def test_a_login_post_answers_503_and_the_form_still_renders(client, database_down):
    response = client.post("/accounts/login/", {"username": "alice", "password": "x"})
    assert response.status_code == 503
    assert client.get("/accounts/login/").status_code == 200  # it needs no database


def test_a_500_without_a_database_becomes_503_and_one_with_it_stays(rf, database_down):
    from django.http import HttpResponse

    from agentlab.unavailable import DatabaseUnavailableMiddleware

    failing = DatabaseUnavailableMiddleware(lambda request: HttpResponse(status=500))
    assert failing(rf.get("/runs/")).status_code == 503
    database_down()
    assert failing(rf.get("/runs/")).status_code == 500


def test_once_the_database_is_back_the_api_works_again(client, token, database_down):
    assert client.get("/api/runs/1", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 503
    database_down()
    response = client.post("/api/runs", b'{"prompt": "p"}', content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 201


def test_a_server_shutting_down_mid_query_is_503_even_before_the_connection_looks_broken(rf, monkeypatch):
    # "terminating connection due to administrator command" (SQLSTATE 57P01)
    # ends the query before psycopg marks the connection broken.
    import psycopg

    from agentlab import unavailable
    from agentlab.unavailable import DatabaseUnavailableMiddleware

    monkeypatch.setattr(unavailable, "_usable", lambda: True)  # the connection does not look broken yet

    class AdminShutdown(psycopg.OperationalError):
        sqlstate = "57P01"

    exc = OperationalError("terminating connection due to administrator command")
    exc.__cause__ = AdminShutdown("terminating connection due to administrator command")
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    response = middleware.process_exception(rf.post("/v1/traces"), exc)
    assert response is not None and response.status_code == 503
    # Any other operational error on a working connection is not an outage.
    other = OperationalError("deadlock detected")
    other.__cause__ = type("Deadlock", (psycopg.OperationalError,), {"sqlstate": "40P01"})("deadlock detected")
    assert middleware.process_exception(rf.post("/v1/traces"), other) is None
