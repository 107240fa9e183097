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
from django.utils.translation import gettext as _

from agentlab.projects.models import Invite, Membership, Project, Role
from agentlab.projects.services import MembershipError, unknown_role
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
        raise unknown_role(role)
    invitee = invitee.strip()
    why = unstorable(invitee)
    if why:
        raise MembershipError(_("username or email: %(why)s") % {"why": why})
    if not invitee:
        raise MembershipError(_("give a username or an email"))
    username, email = "", ""
    if "@" in invitee:
        try:
            validate_email(invitee)
        except ValidationError as exc:
            raise MembershipError(_("%(invitee)r is not an email address") % {"invitee": invitee[:254]}) from exc
        email = invitee
    else:
        try:
            get_user_model().username_validator(invitee)
        except ValidationError as exc:
            raise MembershipError(_("%(invitee)r is neither an email nor a valid username: %(why)s")
                                  % {"invitee": invitee[:150], "why": exc.messages[0]}) from exc
        if len(invitee) > 150:
            raise MembershipError(_("a username has at most %(limit)d characters") % {"limit": 150})
        if get_user_model().objects.filter(username__iexact=invitee).exists():
            raise MembershipError(_("%(invitee)r already has an account: add them by username instead") % {"invitee": invitee})
        username = invitee
    token = secrets.token_urlsafe(32)
    invite = Invite.objects.create(project=project, role=role, username=username, email=email,
                                   token_sha256=token_sha256(token), invited_by=invited_by,
                                   expires_at=timezone.now() + timedelta(days=INVITE_DAYS))
    return invite, token


def invite_email(invite: Invite, link: str) -> None:
    """Through Django's email backend (the console in the demo: the mail is printed in the web log)."""
    expires = timezone.localtime(invite.expires_at).strftime("%Y-%m-%d %H:%M %Z")
    # In the language of the admin who sends it (the invited person has not chosen one yet).
    names = {"project": invite.project, "inviter": invite.invited_by or _("An admin"), "role": invite.role_name,
             "expires": expires, "link": link}
    send_mail(
        subject=_("You are invited to %(project)s on agentlab") % names,
        message=_("%(inviter)s invites you to the project %(project)s on agentlab as a %(role)s.\n\n"
                  "Choose a username and password here (the link works once, until %(expires)s):\n\n"
                  "%(link)s\n") % names,
        from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=[invite.email])


def _day(moment) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d}"


def invite_for_token(token: str, *, for_update: bool = False) -> Invite:
    """The invite a link's token opens. Invite.DoesNotExist for a token nobody
    issued; InviteGone for one used or expired."""
    invites = Invite.objects.select_related("project", "invited_by")
    if for_update:
        invites = invites.select_for_update(of=("self",))
    invite = invites.get(token_sha256=token_sha256(token))
    if invite.used_at is not None:
        raise InviteGone(invite, _("This invite was used on %(date)s.") % {"date": _day(invite.used_at)})
    if invite.revoked_at is not None:
        raise InviteGone(invite, _("This invite was revoked on %(date)s.") % {"date": _day(invite.revoked_at)})
    if invite.expires_at <= timezone.now():
        raise InviteGone(invite, _("This invite expired on %(date)s.") % {"date": _day(invite.expires_at)})
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
