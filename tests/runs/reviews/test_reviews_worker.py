"""Forks from the review queue through a real Celery worker (not eager mode)."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from runs.core.models import Run
from runs.reviews.models import ForkOutcome, ReviewItem
from tests.runs.reviews.test_reviews_helpers import grant_reviewer

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
HX = {"HX-Request": "true"}


def poll_until_done(client, url: str, timeout: float = 60.0) -> str:
    after, body = -1, ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(url, {"after": after}, headers=HX)
        body += response.content.decode()
        marker = "?after="
        if response.status_code == 286:
            return body
        assert response.status_code == 200
        chunk = response.content.decode()
        if marker in chunk:
            after = int(chunk.split(marker, 1)[1].split('"', 1)[0])
        time.sleep(0.3)
    raise AssertionError("the fork did not end")


def test_continue_without_the_watchdog_runs_the_fork_on_a_worker(worker, looping_run, client, user):
    client.force_login(grant_reviewer(user))
    item = ReviewItem.objects.filter(run=looping_run).order_by("step_index").first()
    assert item is not None
    response = client.post(reverse("reviews:fork", args=[looping_run.pk, item.step_index]), {"turns": 5},
                           headers=HX)
    assert response.status_code == 200
    body = poll_until_done(client, reverse("reviews:fork_steps", args=[looping_run.pk, item.step_index]))
    item.refresh_from_db()
    fork = Run.objects.get(pk=item.fork_id)
    assert fork.status == "finished" and fork.policy is None
    assert item.fork_outcome in (ForkOutcome.SUCCEEDED, ForkOutcome.FAILED, ForkOutcome.LOOPED)
    assert "the fork " in body and f'id="step-{item.step_index}"' in body  # its steps streamed in
    if item.fork_outcome == ForkOutcome.SUCCEEDED:
        assert f"the fork succeeded {item.fork_turns} step" in body


def test_a_fork_of_a_dead_endpoint_says_error_with_the_reason(worker, looping_run, client, user):
    client.force_login(grant_reviewer(user))
    Run.objects.filter(pk=looping_run.pk).update(base_url="http://127.0.0.1:9/v1")
    item = ReviewItem.objects.filter(run=looping_run).order_by("step_index").first()
    response = client.post(reverse("reviews:fork", args=[looping_run.pk, item.step_index]), {"turns": 5}, headers=HX)
    assert response.status_code == 200
    body = poll_until_done(client, reverse("reviews:fork_steps", args=[looping_run.pk, item.step_index]))
    item.refresh_from_db()
    assert item.fork_outcome == ForkOutcome.ERROR
    assert "connect" in item.fork_reason.lower()
    assert "the fork ended in error:" in body
    pane = client.get(reverse("reviews:item", args=[looping_run.pk, item.step_index]), headers=HX).content.decode()
    assert "the fork ended in error:" in pane and "onnect" in pane
