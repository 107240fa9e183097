"""Counts the 5xx responses of this process for /metrics (first in MIDDLEWARE, so it sees every response)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

_lock = threading.Lock()
_server_errors = 0


def server_errors() -> int:
    return _server_errors


class ServerErrorCounter:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        global _server_errors
        response = self.get_response(request)
        if response.status_code >= 500:
            with _lock:  # gunicorn's threads share it
                _server_errors += 1
        return response
