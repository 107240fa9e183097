from __future__ import annotations

import json

import pytest
from django.urls import reverse

from runs.core.models import Policy
from tests.projects import team

pytestmark = pytest.mark.django_db


@pytest.fixture
def default_policy(db):
    return Policy.objects.create(project=team(), name="default", version=1, config={"ladder": {"stop_streak": 10}})


def test_pages_require_login(client):
    assert client.get(reverse("policy_list")).status_code == 302
    assert client.post(reverse("policy_new"), {}).status_code == 302


def test_a_new_policy_is_version_one(auth_client, user):
    config = {"thresholds": {"repetition_similarity": 0.7}, "windows": {"stagnation": 6}}
    response = auth_client.post(reverse("policy_new"), {"name": "strict", "description": "tighter",
                                                        "use_json": "on", "config": json.dumps(config)})
    assert response.status_code == 302
    saved = Policy.objects.get(name="strict")
    assert saved.version == 1 and saved.created_by == user
    assert saved.as_policy().thresholds.repetition_similarity == 0.7
    assert saved.as_policy().windows.stagnation == 6


def test_editing_saves_the_next_version_and_keeps_the_old(auth_client, default_policy):
    url = reverse("policy_edit", args=["default"])
    assert "&quot;stop_streak&quot;: 10" in auth_client.get(url).content.decode()  # escaped in the textarea
    response = auth_client.post(url, {"name": "default", "use_json": "on",
                                      "config": json.dumps({"ladder": {"stop_streak": 12}})})
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
    response = auth_client.post(reverse("policy_new"), {"name": "bad", "use_json": "on", "config": config})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Policy.objects.filter(name="bad").exists()


def test_a_taken_name_is_refused_on_create(auth_client, default_policy):
    response = auth_client.post(reverse("policy_new"), {"name": "default", "use_json": "on", "config": "{}"})
    assert response.status_code == 400 and "exists" in response.content.decode()


def test_the_list_shows_versions(auth_client, default_policy):
    body = auth_client.get(reverse("policy_list")).content.decode()
    assert "default" in body and "v1" in body


def test_a_save_is_the_next_version_of_its_name(default_policy, user):
    from runs.policies.services import policy_version_save

    saved = policy_version_save(project_id=team().pk, name="default", config={"name": "x", "version": 9, "ladder": {"stop_streak": 8}},
                                description="d", created_by=user)
    # The column keys are the row's, never the config's.
    assert (saved.version, saved.description, saved.config) == (2, "d", {"ladder": {"stop_streak": 8}})
    assert policy_version_save(project_id=team().pk, name="fresh", config={}).version == 1


def test_a_new_policy_under_an_existing_name_is_refused(default_policy):
    from runs.policies.services import PolicyExists, policy_version_save

    with pytest.raises(PolicyExists):
        policy_version_save(project_id=team().pk, name="default", config={}, new=True)
    assert Policy.objects.filter(name="default").count() == 1


def test_a_new_policy_form_under_an_existing_name_says_so(auth_client, default_policy):
    response = auth_client.post(reverse("policy_new"), {"name": "default", "use_json": "on", "config": "{}"})
    assert response.status_code == 400 and "A policy with this name exists" in response.content.decode()


# -- the editor is a form, each field explained (issue 16, item 11) -----------


def fields_of(config: dict | None = None, **overrides) -> dict:
    """The editor's POST for a policy (the default when none is given), field by field."""
    from runs.policies.forms import initial_of
    from runs.policies.services import policy_config
    from tracing.core.watchdog import DEFAULT_POLICY

    data = {k: v for k, v in initial_of(policy_config(config or DEFAULT_POLICY)).items() if k != "config"}
    data = {k: ("on" if v else "") if isinstance(v, bool) else v for k, v in data.items()}
    data.update(overrides)
    return data


def test_every_field_of_a_policy_is_a_form_field_with_its_explanation(auth_client, default_policy):
    from runs.policies.fields import FIELDS

    body = auth_client.get(reverse("policy_edit", args=["default"])).content.decode()
    for path, doc in FIELDS.items():
        name = path.replace(".", "__")
        assert f'name="{name}"' in body, path
        assert doc.help.replace("'", "&#x27;") in body, path
    assert 'name="ladder__stop_futile" value="2"' in body and 'name="ladder__stop_invalid" value="5"' in body
    assert 'name="ladder__stop_streak" value="10"' in body  # the policy's own value, not the default's
    assert "Advanced: the policy as JSON" in body


def test_a_policy_saved_from_the_fields(auth_client, user):
    data = fields_of(name="patient", description="later stops", ladder__stop_futile=3, ladder__stop_invalid=7,
                     windows__stagnation=6, thresholds__novelty_min=0.2, ladder__tiers=["hint", "stop"],
                     use_complexity="")
    assert auth_client.post(reverse("policy_new"), data).status_code == 302
    policy = Policy.objects.get(name="patient").as_policy()
    assert (policy.ladder.stop_futile, policy.ladder.stop_invalid, policy.windows.stagnation) == (3, 7, 6)
    assert policy.thresholds.novelty_min == 0.2 and policy.ladder.tiers == ("hint", "stop")
    assert policy.use_complexity is False and policy.enabled is True


@pytest.mark.parametrize(("field", "value", "message"), [
    ("thresholds__novelty_min", "4", "less than or equal to 1"),
    ("windows__stagnation", "six", "Enter a whole number"),
    ("ladder__stop_futile", "0", "must be &gt;= 1"),
    ("ladder__tiers", ["stop", "hint", "redirect"], None),  # sent in any order, kept in the ladder's
    ("ladder__tiers", [], "non-empty list of tiers"),
])
def test_bad_values_are_field_errors(auth_client, field, value, message):
    response = auth_client.post(reverse("policy_new"), fields_of(name="bad", **{field: value}))
    if message is None:
        assert response.status_code == 302
        return
    assert response.status_code == 400
    body = response.content.decode()
    row = body.split(f'name="{field}"', 1)[0].rsplit('<p class="field', 1)[1] + body.split(f'name="{field}"', 1)[1]
    assert "has-error" in row.split(">", 1)[0] and message in row.split("</p>", 1)[0]
    assert not Policy.objects.filter(name="bad").exists()


def test_the_disabled_policy_lists_no_tiers(auth_client):
    from runs.policies.services import policy_config
    from tracing.core.watchdog import OFF_POLICY

    Policy.objects.create(project=team(), name="off", version=1, config=policy_config(OFF_POLICY))
    row = auth_client.get(reverse("policy_list")).content.decode().split("<code>off</code>", 1)[1].split("</tr>")[0]
    assert "hint" not in row and "signals only" in row
