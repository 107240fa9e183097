"""Login throttling (issue 13, item 6): 100 wrong passwords lock the account out
from that address, so the right one then fails too, with a clear message,
until the cool-off has passed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.7"


@pytest.fixture
def user(django_user_model):
    # These tests log in with a real password (the shared fixture has none).
    return django_user_model.objects.create_user("alice", password="pw")


def _login(client: Client, password: str, ip: str = ATTACKER):
    return client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR=ip)


def test_a_hundred_wrong_passwords_lock_the_right_one_out(user):
    client = Client()
    statuses = [_login(client, f"guess-{i}").status_code for i in range(100)]
    limit = settings.AXES_FAILURE_LIMIT
    # Wrong passwords redisplay the form until the limit, then the lockout answers.
    assert statuses[: limit - 1] == [200] * (limit - 1)
    assert set(statuses[limit:]) == {429}

    response = _login(client, "pw")
    assert response.status_code == 429
    text = response.content.decode()
    assert "Too many failed log-ins" in text
    assert f"after {limit} wrong passwords" in text
    assert f"Try again in {int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)} minutes" in text
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_for_that_user_from_that_address(user, django_user_model):
    django_user_model.objects.create_user("bob", password="pw")
    for i in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), f"guess-{i}")
    # The same user from elsewhere, and another user from the same address, still get in.
    assert _login(Client(), "pw", ip="198.51.100.9").status_code == 302
    other = Client().post("/accounts/login/", {"username": "bob", "password": "pw"}, REMOTE_ADDR=ATTACKER)
    assert other.status_code == 302


def test_after_the_cool_off_the_right_password_works_again(user):
    client = Client()
    for i in range(settings.AXES_FAILURE_LIMIT):
        _login(client, f"guess-{i}")
    assert _login(client, "pw").status_code == 429
    # As if the cool-off had passed since the last attempt.
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time
                                 - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    response = _login(client, "pw")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(user.pk)
