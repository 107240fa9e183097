"""Invites and accounts made on the members page (issue 30, item 11): a one-time
link by username or email (only its SHA-256 stored, 7 days, single use; used,
revoked or expired 410, never issued 404), emailed through Django's backend and
shown to the admin; or the account created by the admin. Only admins do either.
The access matrix (tests/test_access.py) has every URL by role; the browser
walk is in tests/test_browser_invites.py."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agentlab.projects import current
from agentlab.projects.invites import INVITE_DAYS, invite_create
from agentlab.projects.models import Invite, Membership, Role

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"
LINK = re.compile(r"http://testserver(/projects/invites/[A-Za-z0-9_-]+/)")


def _invite(auth_client, who: str, role: str = Role.REVIEWER) -> str:
    """Invite `who` from the members page; the path of the link the page shows once."""
    response = auth_client.post(reverse("projects:members"), {"who": who, "role": role})
    assert response.status_code == 302, response.content[:500]
    page = auth_client.get(reverse("projects:members")).content.decode()
    return LINK.search(page).group(1)


def _signs_in(username: str) -> bool:
    """Through the login page, as a person does (axes needs the request)."""
    response = Client().post(reverse("login"), {"username": username, "password": PASSWORD})
    return response.status_code == 302


def _join(path: str, username: str = "", password: str = PASSWORD):
    return Client().post(path, {"username": username, "password1": password, "password2": password})


def test_an_email_invite_is_mailed_shown_once_and_stored_as_a_hash(auth_client, project):
    path = _invite(auth_client, "nina@example.com")
    token = path.rstrip("/").rsplit("/", 1)[1]
    assert len(token) >= 40
    # Emailed with the same link, and the project, the role and the week it lasts.
    (sent,) = mail.outbox
    assert sent.to == ["nina@example.com"] and "Team" in sent.subject
    assert f"http://testserver{path}" in sent.body and "as a reviewer" in sent.body
    # Shown once: the next visit of the members page lists the invite, not its link.
    again = auth_client.get(reverse("projects:members")).content.decode()
    assert token not in again and "nina@example.com" in again
    invite = Invite.objects.get()
    assert invite.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert timedelta(days=INVITE_DAYS) - timedelta(minutes=1) < invite.expires_at - timezone.now() <= timedelta(
        days=INVITE_DAYS)
    # The token itself is nowhere in the database.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM projects_invite")
        assert not any(token in str(value) for row in cursor.fetchall() for value in row)


def test_the_invited_person_sets_a_password_and_lands_in_the_project_with_the_role(auth_client, project):
    path = _invite(auth_client, "nina@example.com")
    page = Client().get(path)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Join Team" in body and "as a <strong>reviewer</strong>" in body and 'value="nina"' in body

    newcomer = Client()
    response = newcomer.post(path, {"username": "nina", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("runs:list")
    nina = get_user_model().objects.get(username="nina")
    assert nina.email == "nina@example.com" and nina.check_password(PASSWORD)
    assert Membership.objects.get(user=nina).project == project
    assert Membership.objects.get(user=nina).role == Role.REVIEWER
    # Signed in, in that project: the run list greets them with it.
    landed = newcomer.get(reverse("runs:list"))
    assert landed.status_code == 200 and newcomer.session[current.SESSION_KEY] == project.pk
    assert "Welcome to Team: you are a reviewer." in landed.content.decode()
    # And signing in again later works with the password chosen.
    assert _signs_in("nina")


def test_a_used_link_is_410_with_a_page_that_says_so(auth_client):
    path = _invite(auth_client, "nina@example.com")
    assert _join(path, "nina").status_code == 302
    second = _join(path, "nina2")
    assert second.status_code == 410
    body = second.content.decode()
    assert "This invite no longer works" in body and "was used on" in body and "alice" in body
    assert Client().get(path).status_code == 410
    assert not get_user_model().objects.filter(username="nina2").exists()


def test_an_expired_or_revoked_link_is_410_and_a_forged_one_404(auth_client, user, project):
    expired_path = _invite(auth_client, "old@example.com")
    Invite.objects.filter(email="old@example.com").update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().get(expired_path)
    assert response.status_code == 410 and "expired on" in response.content.decode()
    assert _join(expired_path, "old").status_code == 410

    revoked_path = _invite(auth_client, "gone@example.com")
    revoked = Invite.objects.get(email="gone@example.com")
    assert auth_client.post(reverse("projects:invite_revoke", args=[revoked.pk])).status_code == 302
    response = Client().get(revoked_path)
    assert response.status_code == 410 and "revoked on" in response.content.decode()
    members = auth_client.get(reverse("projects:members")).content.decode()
    assert f'id="invite-{revoked.pk}"' not in members and "old@example.com" not in members  # pending only

    forged = reverse("projects:invite_accept", args=["A" * 43])
    response = Client().get(forged)
    assert response.status_code == 404 and "No such invite" in response.content.decode()  # and what to do
    assert _join(forged, "forger").status_code == 404
    assert not get_user_model().objects.filter(username__in=["old", "forger"]).exists()


def test_an_invite_by_username_keeps_that_username(auth_client, project):
    path = _invite(auth_client, "nadia", Role.VIEWER)
    assert not mail.outbox  # no address to send it to: the admin passes the link on
    body = Client().get(path).content.decode()
    assert "a password for <strong>nadia</strong>" in body
    # A disabled field: whatever is posted, the account is the one the admin named.
    assert _join(path, "someone-else").status_code == 302
    assert Membership.objects.get(user__username="nadia", project=project).role == Role.VIEWER
    assert not get_user_model().objects.filter(username="someone-else").exists()


def test_an_existing_username_is_added_at_once_and_bad_invitees_are_400(auth_client, project, django_user_model):
    django_user_model.objects.create_user("carol")
    members = reverse("projects:members")
    assert auth_client.post(members, {"who": "carol", "role": "viewer"}).status_code == 302
    assert Membership.objects.filter(user__username="carol", project=project).exists()
    assert not Invite.objects.exists()
    for who, why in (("Carol", "already has an account"), ("nina@", "is not an email address"),
                     ("", "give a username or an email"), ("a b", "neither an email nor a valid username")):
        response = auth_client.post(members, {"who": who, "role": "viewer"})
        assert response.status_code == 400 and why in response.content.decode(), who
    response = auth_client.post(members, {"who": "nina@example.com", "role": "owner"})
    assert response.status_code == 400 and "unknown role" in response.content.decode()
    assert not Invite.objects.exists()


def test_a_weak_or_mismatched_password_is_refused_and_the_link_still_works(auth_client):
    path = _invite(auth_client, "nina@example.com")
    weak = _join(path, "nina", "12345678")
    assert weak.status_code == 400 and "too common" in weak.content.decode()
    mismatch = Client().post(path, {"username": "nina", "password1": PASSWORD, "password2": PASSWORD + "x"})
    assert mismatch.status_code == 400 and "didn’t match" in mismatch.content.decode()
    assert _join(path, "nina").status_code == 302


def test_only_admins_invite_or_create_accounts_and_the_refusal_names_the_role(client, member):
    for role in (Role.VIEWER, Role.REVIEWER):
        someone = member(f"a-{role}", role)
        client.force_login(someone)
        for url, data in ((reverse("projects:members"), {"who": "nina@example.com", "role": "admin"}),
                          (reverse("projects:member_create"), {"username": "x", "password1": PASSWORD,
                                                                "password2": PASSWORD, "role": "admin"})):
            response = client.post(url, data)
            assert response.status_code == 403
            assert f"you are a {role}; this needs the admin role" in response.content.decode()
    assert not Invite.objects.exists() and not get_user_model().objects.filter(username="x").exists()
    assert not mail.outbox


def test_an_admin_creates_an_account_on_the_members_page(auth_client, project):
    create = reverse("projects:member_create")
    response = auth_client.post(create, {"username": "omar", "password1": PASSWORD, "password2": PASSWORD,
                                         "role": "reviewer"})
    assert response.status_code == 302
    assert Membership.objects.get(user__username="omar", project=project).role == Role.REVIEWER
    assert _signs_in("omar")
    # Taken username, short password: 400 on the members page, saying which field.
    again = auth_client.post(create, {"username": "omar", "password1": "short", "password2": "short",
                                      "role": "viewer"})
    body = again.content.decode()
    assert again.status_code == 400 and "already exists" in body and "too short" in body
    assert Membership.objects.filter(project=project).count() == 2


def test_an_invite_whose_email_cannot_be_sent_still_shows_its_link_and_says_why(auth_client, settings):
    # A real SMTP client against a port nobody listens on.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    auth_client.post(reverse("projects:members"), {"who": "nina@example.com", "role": "viewer"})
    body = auth_client.get(reverse("projects:members")).content.decode()
    assert "The email could not be sent" in body and "send them the link yourself" in body
    assert Client().get(LINK.search(body).group(1)).status_code == 200


def test_invite_create_refuses_text_postgres_cannot_store(project, user):
    with pytest.raises(ValueError, match="NUL"):
        invite_create(project=project, invitee="a\x00b", role=Role.VIEWER, invited_by=user)


def test_the_invite_email_and_pages_follow_the_language(auth_client):
    """The email goes out in the language of the admin who sends it; the invite's page in the reader's."""
    auth_client.defaults["HTTP_ACCEPT_LANGUAGE"] = "zh-hans"
    auth_client.post(reverse("projects:members"), {"who": "nina@example.com", "role": Role.REVIEWER})
    page = auth_client.get(reverse("projects:members")).content.decode()
    assert "已发送邮件至 nina@example.com。" in page and "待接受的邀请" in page
    (sent,) = mail.outbox
    assert sent.subject == "你受邀加入 agentlab 上的项目 Team" and "以审阅者身份加入" in sent.body
    path = LINK.search(page).group(1)
    assert "加入 Team" in Client(HTTP_ACCEPT_LANGUAGE="zh-hans").get(path).content.decode()
    assert "Join Team" in Client(HTTP_ACCEPT_LANGUAGE="en").get(path).content.decode()
