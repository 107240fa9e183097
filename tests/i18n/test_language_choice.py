"""How a request's language is chosen (issue 30): browser, header switch, the user's stored choice."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agentlab.preferences.models import LanguagePreference

pytestmark = pytest.mark.django_db


def test_the_browser_language_decides_for_a_visitor(client):
    assert 'lang="en"' in client.get(reverse("login")).content.decode()
    page = client.get(reverse("login"), headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}).content.decode()
    assert 'lang="zh-hans"' in page and "登录" in page


def test_the_switch_stores_the_users_choice_and_the_next_log_in_uses_it(client, user):
    client.force_login(user)
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": "/dashboard/"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert LanguagePreference.objects.get(user=user).language == "zh-hans"
    assert "仪表盘" in client.get("/dashboard/").content.decode()

    client.logout()
    client.cookies.clear()  # another browser: no language cookie, asks for English
    client.force_login(user)
    page = client.get("/runs/", headers={"Accept-Language": "en"}).content.decode()
    assert 'lang="zh-hans"' in page

    client.post(reverse("set_language"), {"language": "en", "next": "/runs/"})
    assert LanguagePreference.objects.get(user=user).language == "en"
    assert ">Dashboard<" in client.get("/runs/").content.decode()


def test_an_unknown_language_is_a_clear_400_and_changes_nothing(client, user):
    client.force_login(user)
    response = client.post(reverse("set_language"), {"language": "xx", "next": "/runs/"})
    assert response.status_code == 400 and "Unknown language" in response.content.decode()
    assert not LanguagePreference.objects.filter(user=user).exists()


def test_the_switch_is_csrf_protected(user):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(reverse("set_language"), {"language": "zh-hans"}).status_code == 403


def test_relative_dates_follow_the_language(client, user, make_run):
    make_run(steps=2)
    client.force_login(user)
    assert "minutes" in client.get(reverse("runs:list")).content.decode()  # the run's age: "0 minutes"
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/runs/"})
    page = client.get(reverse("runs:list")).content.decode()
    assert "0\xa0分钟" in page and "minutes" not in page  # (timesince joins with a no-break space)
