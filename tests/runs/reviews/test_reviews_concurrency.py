"""Double submits and two reviewers at once: threads, each on its own connection."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from runs.reviews import services as reviews
from runs.reviews.models import LabelState, ReviewItem, ReviewLabel
from tests.runs.reviews.test_reviews_helpers import interrupted_run

pytestmark = pytest.mark.django_db(transaction=True)


def at_once(calls) -> list[BaseException]:
    """Run the calls in threads released together; return what they raised."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def worker(call):
        try:
            barrier.wait()
            call()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return errors


@pytest.fixture
def item(make_run):
    return ReviewItem.objects.get(run=interrupted_run(make_run), step_index=6)


def test_a_double_submit_stores_one_label(item, user):
    errors = at_once([lambda: reviews.review_label(item_id=item.pk, reviewer=user, value="justified", note="x")] * 6)
    assert errors == []
    assert ReviewLabel.objects.filter(item=item).count() == 1
    item.refresh_from_db()
    assert (item.label, item.label_count) == (LabelState.JUSTIFIED, 1)


def test_two_reviewers_at_once_lose_nothing(item, user, other_user, django_user_model):
    reviewers = [user, other_user, *(django_user_model.objects.create_user(f"r{i}") for i in range(4))]
    values = ["justified", "wrongly_killed", "justified", "unsure", "justified", "wrongly_killed"]
    for _ in range(3):  # a few rounds: the same reviewers changing their minds at once
        errors = at_once([
            (lambda r=r, v=v: reviews.review_label(item_id=item.pk, reviewer=r, value=v))
            for r, v in zip(reviewers, values, strict=True)
        ])
        assert errors == []
        values = values[1:] + values[:1]
    current = ReviewLabel.objects.filter(item=item, is_current=True)
    assert current.count() == len(reviewers)
    assert sorted(current.values_list("reviewer_id", flat=True)) == sorted(r.pk for r in reviewers)
    # Every label ever given is kept: 6 in the first round, then only the changes.
    assert ReviewLabel.objects.filter(item=item).count() == 18
    assert not ReviewLabel.objects.filter(item=item, is_current=False, superseded_by__isnull=True).exists()
    item.refresh_from_db()
    assert item.label_count == len(reviewers)
    assert item.label == reviews.label_state(list(current.values_list("value", flat=True)))


def test_one_reviewer_changing_their_mind_in_two_tabs_keeps_one_current(item, user):
    errors = at_once([
        (lambda v=v: reviews.review_label(item_id=item.pk, reviewer=user, value=v))
        for v in ["justified", "wrongly_killed", "unsure", "justified"]
    ])
    assert errors == []
    current = ReviewLabel.objects.get(item=item, reviewer=user, is_current=True)
    item.refresh_from_db()
    assert item.label == current.value and item.label_count == 1
    history = ReviewLabel.objects.filter(item=item, is_current=False)
    assert all(old.superseded_by_id is not None for old in history)
