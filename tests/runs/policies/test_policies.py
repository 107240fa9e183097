from __future__ import annotations

import json

import pytest
from django.urls import reverse

from runs.policies.models import Policy

pytestmark = pytest.mark.django_db


@pytest.fixture
def default_policy(db):
    return Policy.objects.create(name="default", version=1, config={"ladder": {"stop_streak": 10}})


def test_pages_require_login(client):
    assert client.get(reverse("policy_list")).status_code == 302
    assert client.post(reverse("policy_new"), {}).status_code == 302


def test_a_new_policy_is_version_one(auth_client, user):
    config = {"thresholds": {"repetition_similarity": 0.7}, "windows": {"stagnation": 6}}
    response = auth_client.post(reverse("policy_new"), {"name": "strict", "description": "tighter",
                                                        "config": json.dumps(config)})
    assert response.status_code == 302
    saved = Policy.objects.get(name="strict")
    assert saved.version == 1 and saved.created_by == user
    assert saved.as_policy().thresholds.repetition_similarity == 0.7
    assert saved.as_policy().windows.stagnation == 6


def test_editing_saves_the_next_version_and_keeps_the_old(auth_client, default_policy):
    url = reverse("policy_edit", args=["default"])
    assert "&quot;stop_streak&quot;: 10" in auth_client.get(url).content.decode()  # escaped in the textarea
    response = auth_client.post(url, {"name": "default", "config": json.dumps({"ladder": {"stop_streak": 12}})})
    assert response.status_code == 302
    versions = list(Policy.objects.filter(name="default").order_by("version").values_list("version", flat=True))
    assert versions == [1, 2]
    assert Policy.objects.get(name="default", version=1).as_policy().ladder.stop_streak == 10
    assert Policy.objects.latest_versions().get(name="default").version == 2


@pytest.mark.parametrize(("config", "message"), [
    ("{not json", "not JSON"),
    ('{"thresholds": {"novelty_min": 4}}', "thresholds.novelty_min"),
    ('{"windows": {"stagnation": "six"}}', "windows.stagnation"),
    ('{"ladder": {"tiers": ["stop", "hint"]}}', "ladder.tiers"),
    ('{"colour": "red"}', "colour"),
    ('{"name": "sneaky"}', "name"),
    ("[1, 2]", "(root)"),
])
def test_a_malformed_policy_gets_a_message_naming_the_field(auth_client, config, message):
    response = auth_client.post(reverse("policy_new"), {"name": "bad", "config": config})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Policy.objects.filter(name="bad").exists()


def test_a_taken_name_is_refused_on_create(auth_client, default_policy):
    response = auth_client.post(reverse("policy_new"), {"name": "default", "config": "{}"})
    assert response.status_code == 400 and "exists" in response.content.decode()


def test_the_list_shows_versions(auth_client, default_policy):
    body = auth_client.get(reverse("policy_list")).content.decode()
    assert "default" in body and "v1" in body


def test_a_save_is_the_next_version_of_its_name(default_policy, user):
    from runs.policies.services import policy_version_save

    saved = policy_version_save(name="default", config={"name": "x", "version": 9, "ladder": {"stop_streak": 8}},
                                description="d", created_by=user)
    # The column keys are the row's, never the config's.
    assert (saved.version, saved.description, saved.config) == (2, "d", {"ladder": {"stop_streak": 8}})
    assert policy_version_save(name="fresh", config={}).version == 1


def test_a_new_policy_under_an_existing_name_is_refused(default_policy):
    from runs.policies.services import PolicyExists, policy_version_save

    with pytest.raises(PolicyExists):
        policy_version_save(name="default", config={}, new=True)
    assert Policy.objects.filter(name="default").count() == 1


def test_a_new_policy_form_under_an_existing_name_says_so(auth_client, default_policy):
    response = auth_client.post(reverse("policy_new"), {"name": "default", "config": "{}"})
    assert response.status_code == 400 and "A policy with this name exists" in response.content.decode()
