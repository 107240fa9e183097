"""A project and its members' roles (DESIGN.md 3, "Who may do what")."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


class Project(models.Model):
    """A team's runs, tasks, policies and API tokens. Every run belongs to one."""

    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """Each role can do what the one before it can, and more."""

    VIEWER = "viewer", _("viewer (read)")
    REVIEWER = "reviewer", _("reviewer (labels, forks, reruns)")
    ADMIN = "admin", _("admin (policies, tokens, members, what-if winners)")


RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.ADMIN: 2}
# A role's short name, as the header's project switch and the members' messages say it.
ROLE_NAMES = {Role.VIEWER: pgettext_lazy("role", "viewer"), Role.REVIEWER: pgettext_lazy("role", "reviewer"),
              Role.ADMIN: pgettext_lazy("role", "admin")}


def role_name(role: str) -> str:
    """A role's short name in the request's language (as stored when it is not a role)."""
    return str(ROLE_NAMES.get(role, role))


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project__name", "project_id"]
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="membership_user_project_uniq")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"

    def has_role(self, role: str) -> bool:
        return RANK[Role(self.role)] >= RANK[Role(role)]

    @property
    def role_name(self) -> str:
        return role_name(self.role)

    @property
    def is_reviewer(self) -> bool:
        return self.has_role(Role.REVIEWER)

    @property
    def is_admin(self) -> bool:
        return self.has_role(Role.ADMIN)


class Invite(models.Model):
    """A one-time link into a project with a role, for someone without an account.

    Only the SHA-256 of the link's token is kept: whoever reads the table cannot
    use a pending invite. The link works once, for INVITE_DAYS."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invites")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    # Whom it is for: a username kept for them, or an email the link went to (or both).
    username = models.CharField(max_length=150, blank=True)
    email = models.EmailField(blank=True)
    token_sha256 = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                   related_name="invites_sent")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="invites_used")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invite of {self.username or self.email} to {self.project} ({self.role})"

    @property
    def role_name(self) -> str:
        return role_name(self.role)

    @property
    def invitee(self) -> str:
        return self.username or self.email
