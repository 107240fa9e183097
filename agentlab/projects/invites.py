"""Invites: a one-time link into a project, for someone who has no account yet.

The link carries a random token; the table keeps only its SHA-256, so reading
the table (or a backup of it) opens nothing. A link works once and for
INVITE_DAYS; used, revoked or expired it answers 410 (it existed, it is gone), and a
token nobody issued answers 404.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from agentlab.projects.models import Invite, Membership, Project, Role
from agentlab.projects.services import MembershipError
from agentlab.storable import unstorable

INVITE_DAYS = 7


class InviteGone(Exception):
    """The link was used or has expired (410)."""

    def __init__(self, invite: Invite, why: str) -> None:
        super().__init__(why)
        self.invite = invite


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invite_create(*, project: Project, invitee: str, role: str, invited_by) -> tuple[Invite, str]:
    """An invite for `invitee` (an email, or a username nobody has yet) and its
    token, which exists only in the return value: show it or send it now."""
    if role not in Role.values:
        raise MembershipError(f"unknown role {role!r}: one of {', '.join(Role.values)}")
    invitee = invitee.strip()
    why = unstorable(invitee)
    if why:
        raise MembershipError(f"username or email: {why}")
    if not invitee:
        raise MembershipError("give a username or an email")
    username, email = "", ""
    if "@" in invitee:
        try:
            validate_email(invitee)
        except ValidationError as exc:
            raise MembershipError(f"{invitee[:254]!r} is not an email address") from exc
        email = invitee
    else:
        try:
            get_user_model().username_validator(invitee)
        except ValidationError as exc:
            raise MembershipError(f"{invitee[:150]!r} is neither an email nor a valid username: {exc.messages[0]}") from exc
        if len(invitee) > 150:
            raise MembershipError("a username has at most 150 characters")
        if get_user_model().objects.filter(username__iexact=invitee).exists():
            raise MembershipError(f"{invitee!r} already has an account: add them by username instead")
        username = invitee
    token = secrets.token_urlsafe(32)
    invite = Invite.objects.create(project=project, role=role, username=username, email=email,
                                   token_sha256=token_sha256(token), invited_by=invited_by,
                                   expires_at=timezone.now() + timedelta(days=INVITE_DAYS))
    return invite, token


def invite_email(invite: Invite, link: str) -> None:
    """Through Django's email backend (the console in the demo: the mail is printed in the web log)."""
    expires = timezone.localtime(invite.expires_at).strftime("%Y-%m-%d %H:%M %Z")
    send_mail(
        subject=f"You are invited to {invite.project} on agentlab",
        message=(f"{invite.invited_by or 'An admin'} invites you to the project {invite.project} on agentlab "
                 f"as a {invite.role}.\n\nChoose a username and password here (the link works once, "
                 f"until {expires}):\n\n{link}\n"),
        from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=[invite.email])


def invite_for_token(token: str, *, for_update: bool = False) -> Invite:
    """The invite a link's token opens. Invite.DoesNotExist for a token nobody
    issued; InviteGone for one used or expired."""
    invites = Invite.objects.select_related("project", "invited_by")
    if for_update:
        invites = invites.select_for_update(of=("self",))
    invite = invites.get(token_sha256=token_sha256(token))
    if invite.used_at is not None:
        raise InviteGone(invite, f"This invite was used on {timezone.localtime(invite.used_at):%Y-%m-%d}.")
    if invite.revoked_at is not None:
        raise InviteGone(invite, f"This invite was revoked on {timezone.localtime(invite.revoked_at):%Y-%m-%d}.")
    if invite.expires_at <= timezone.now():
        raise InviteGone(invite, f"This invite expired on {timezone.localtime(invite.expires_at):%Y-%m-%d}.")
    return invite


@transaction.atomic
def invite_accept(*, token: str, username: str, password: str):
    """The new user, a member of the invite's project with its role. The invite
    is locked while it is used: two tabs submitting the same link make one account."""
    invite = invite_for_token(token, for_update=True)
    user = get_user_model().objects.create_user(username=invite.username or username, email=invite.email,
                                                password=password)
    Membership.objects.create(user=user, project=invite.project, role=invite.role)
    invite.used_at, invite.used_by = timezone.now(), user
    invite.save(update_fields=["used_at", "used_by"])
    return user, invite


def invite_revoke(*, invite: Invite) -> None:
    invite.revoked_at = timezone.now()
    invite.save(update_fields=["revoked_at"])


def pending_invites(project: Project):
    return (Invite.objects.filter(project=project, used_at__isnull=True, revoked_at__isnull=True,
                                  expires_at__gt=timezone.now())
            .select_related("invited_by"))
