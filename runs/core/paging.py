"""Keyset pages of the run list and the review queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest


def keyset_page(qs: QuerySet, size: int, request: HttpRequest, cursor: Callable[[Any], str]) -> tuple[list, str]:
    """The first `size` rows of `qs` (already ordered and past the request's
    cursor) and the query string of the next page: the request's own with
    `before` set to the last row's cursor, or "" on the last page. One more
    row is read than shown, to know whether there is a next page."""
    page = list(qs[: size + 1])
    rows = page[:size]
    if len(page) <= size:
        return rows, ""
    params = request.GET.copy()
    params["before"] = cursor(rows[-1])
    return rows, params.urlencode()
