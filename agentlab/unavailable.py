"""While Postgres is unreachable, every entry point answers 503 with Retry-After (issue 28).

An OTLP exporter retries 429, 502, 503 and 504, never a 500: a span sent
during an outage answered 500 is lost. A request that fails to connect, or
whose connection breaks mid-request, is answered 503 instead of 500. The API
and OTLP get JSON, people a plain page built without a template (rendering
one may query the database that is down).

Other OperationalErrors (a deadlock, a statement timeout) on a working
connection are not an outage and stay what they are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)

# What a client is told to wait. Short, because an OTLP exporter's retries
# must fit its export timeout: OpenTelemetry's (10 s, at most 6 tries, and
# Retry-After instead of its own backoff) tries again at 3, 6 and 9 s, riding
# out an outage of 9 s; told 5 it tried once more, at 5 s, and dropped the
# batch of an outage of 6 s (tests/drills: Postgres stopped while an exporter
# sends).
RETRY_AFTER_S = 3
# Paths whose clients are programs: they get JSON.
MACHINE_PREFIXES = ("/api/", "/v1/")
MESSAGE = "the database is unreachable; try again shortly"
PAGE = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>agentlab: unavailable</title></head>"
        "<body><h1>agentlab is unavailable</h1><p>The database cannot be reached. Nothing was lost: reload this "
        "page in a few seconds.</p></body></html>")


def unavailable(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(MACHINE_PREFIXES):
        # google.rpc.Status-shaped for OTLP (code 14: UNAVAILABLE), with the API's "error" key.
        response: HttpResponse = JsonResponse({"code": 14, "message": MESSAGE, "error": MESSAGE}, status=503)
    else:
        response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_S)
    response["Cache-Control"] = "no-store"
    return response


def _usable() -> bool:
    raw = connection.connection
    return raw is not None and not getattr(raw, "closed", False) and not getattr(raw, "broken", False)


# SQLSTATE classes of a lost server: 08 connection exception, 57 operator
# intervention (admin_shutdown "terminating connection due to administrator
# command", crash_shutdown, cannot_connect_now while it starts).
_LOST_STATES = ("08", "57")


def _connection_lost(exc: Exception) -> bool:
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    # A server shutting down ends the query with an error of its own before
    # psycopg marks the connection broken: the state says so at once.
    if (getattr(exc.__cause__, "sqlstate", None) or "").startswith(_LOST_STATES):
        return True
    # At connect, the connection is None; lost mid-request, psycopg marks it broken or closed.
    return not _usable()


class DatabaseUnavailableMiddleware:
    """First after static files. A view that cannot reach Postgres (at connect
    or mid-request) raises OperationalError / InterfaceError: process_exception
    answers 503. A middleware that cannot (the session, the login throttle) has
    its error turned into a 500 before it gets here: a 500 with no working
    connection is checked by connecting, and answered 503 if that fails too.
    A page that needs no database (the login form) still renders without one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 500 and not _usable():
            try:
                connection.ensure_connection()
            except (OperationalError, InterfaceError) as exc:
                log.warning("database unreachable, answering 503: %s", str(exc).strip()[:200])
                return unavailable(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if _connection_lost(exception):
            log.warning("database unreachable, answering 503: %s", str(exception).strip()[:200])
            return unavailable(request)
        return None
