"""The run page renders each step row once per content (runs.core.step_rows, issue 31)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.safestring import SafeString

from runs.core import step_rows
from runs.core.models import Run
from tracing.store.models import Step

pytestmark = pytest.mark.django_db
ROW = "runs/_step_row.html"
# The page's CSRF token is masked afresh on every request.
_TOKEN = re.compile(r"[A-Za-z0-9]{64}")


@pytest.fixture(autouse=True)
def _empty_cache():
    step_rows.rows.clear()
    yield
    step_rows.rows.clear()


def _page(client, run: Run):
    response = client.get(reverse("runs:detail", args=[run.pk]))
    assert response.status_code == 200
    return response


def _rows_rendered(response) -> int:
    return sum(t.name == ROW for t in response.templates)


def test_a_second_view_renders_no_row_again(auth_client, make_run):
    run = make_run(steps=12)
    assert _rows_rendered(_page(auth_client, run)) == 12
    assert _rows_rendered(_page(auth_client, run)) == 0
    assert len(step_rows.rows) == 12


def test_the_cached_page_is_the_rendered_page(auth_client, make_run):
    run = make_run(steps=9)
    Run.objects.filter(pk=run.pk).update(first_anchor_break=4, anchor_reason="no observation says so")
    first, second = _page(auth_client, run), _page(auth_client, run)
    assert _rows_rendered(second) == 0
    assert _TOKEN.sub("", first.content.decode()) == _TOKEN.sub("", second.content.decode())


def test_a_changed_step_is_rendered_again(auth_client, make_run):
    run = make_run(steps=6)
    _page(auth_client, run)
    # Any writer, a queryset update included: the key is the row's content.
    Step.objects.filter(run=run, index=2).update(text="a freshly edited observation", meta={"status": "error"})
    response = _page(auth_client, run)
    assert _rows_rendered(response) == 1
    body = response.content.decode()
    assert "a freshly" in body and "status-error" in body


def test_a_moved_anchor_break_renders_both_rows_again(auth_client, make_run):
    run = make_run(steps=6)
    Run.objects.filter(pk=run.pk).update(first_anchor_break=2, anchor_reason="first reason")
    _page(auth_client, run)
    Run.objects.filter(pk=run.pk).update(first_anchor_break=4, anchor_reason="second reason")
    response = _page(auth_client, run)
    assert _rows_rendered(response) == 2  # the old break and the new one
    body = response.content.decode()
    assert "second reason" in body and "first reason" not in body


def test_the_live_poll_shares_the_rows(auth_client, make_run):
    run = make_run(steps=6, status=Run.Status.RUNNING)
    _page(auth_client, run)
    response = auth_client.get(reverse("runs:steps", args=[run.pk]), {"after": 2}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert _rows_rendered(response) == 0
    assert 'id="step-5"' in response.content.decode()


def test_the_escaping_is_the_templates(auth_client, make_run):
    run = make_run(steps=3)
    Step.objects.filter(run=run, index=0).update(text="<script>alert('x')</script>")
    for _ in range(2):
        body = _page(auth_client, run).content.decode()
        assert "<script>alert(" not in body


def test_the_cache_forgets_the_least_recently_used_row():
    cache = step_rows.RowCache(max_rows=2)
    for key in ("a", "b"):
        cache.set(key, SafeString(key))
    assert cache.get("a") == "a"  # now b is the oldest
    cache.set("c", SafeString("c"))
    assert cache.get("b") is None and cache.get("a") == "a" and cache.get("c") == "c"


def test_a_step_not_stored_has_no_key():
    assert step_rows.row_key(Step(index=0, kind="thought", text="preview"), {}) is None
