from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.projects import project_of
from tracing.store.ingest.writes import token_create, token_user
from tracing.store.models import ApiToken

pytestmark = pytest.mark.django_db


def test_creating_a_token_shows_it_once_and_stores_only_its_hash(auth_client, user):
    response = auth_client.post("/settings/tokens/", {"name": "ci"})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=user)
    plain = response.context["created"]["plain"]
    assert plain.encode() in response.content
    assert token.token_hash == hashlib.sha256(plain.encode()).hexdigest()
    assert plain not in token.token_hash and token.prefix == plain[:10]
    page = auth_client.get("/settings/tokens/")
    assert plain.encode() not in page.content
    assert token.prefix.encode() in page.content and b"ci" in page.content


def test_a_token_needs_a_name(auth_client):
    response = auth_client.post("/settings/tokens/", {"name": " "})
    assert response.status_code == 400
    assert ApiToken.objects.count() == 0


def test_the_list_shows_only_my_tokens(auth_client, other_user):
    token_create(user=other_user, project_id=project_of(other_user).pk, name="bobs-secret-token")
    assert b"bobs-secret-token" not in auth_client.get("/settings/tokens/").content


def test_revoking_a_token_stops_it_working(auth_client, user):
    token, plain = token_create(user=user, project_id=project_of(user).pk, name="old")
    assert token_user(plain).user == user
    response = auth_client.post(f"/settings/tokens/{token.pk}/revoke/")
    assert response.status_code == 302
    assert token_user(plain) is None
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_another_users_token_cannot_be_revoked(auth_client, other_user):
    token, plain = token_create(user=other_user, project_id=project_of(other_user).pk, name="bob")
    assert auth_client.post(f"/settings/tokens/{token.pk}/revoke/").status_code == 404
    assert token_user(plain).user == other_user


def test_the_page_needs_a_login(client):
    response = client.get("/settings/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_last_use_is_recorded(user):
    token, plain = token_create(user=user, project_id=project_of(user).pk, name="x")
    token_user(plain)
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_command_prints_a_working_token(user):
    out = StringIO()
    call_command("apitoken", "create", "--user", "alice", "--name", "cli", stdout=out)
    plain = out.getvalue().strip()
    assert plain.startswith("al_") and token_user(plain).user == user
    listing = StringIO()
    call_command("apitoken", "list", "--user", "alice", stdout=listing)
    assert plain[:10] in listing.getvalue() and "active" in listing.getvalue()
    call_command("apitoken", "revoke", plain[:10], stdout=StringIO())
    assert token_user(plain) is None


def test_the_command_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("apitoken", "create", "--user", "nobody")
