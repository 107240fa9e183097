"""Writes on projects and their members."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import gettext as _

from agentlab.projects.models import Membership, Project, Role
from agentlab.storable import unstorable


class MembershipError(ValueError):
    pass


def unknown_role(role: str) -> MembershipError:
    return MembershipError(_("unknown role %(role)r: one of %(roles)s") % {"role": role, "roles": ", ".join(Role.values)})


def _keep_an_admin(project: Project, leaving: Membership) -> None:
    # A project with no admin could never be administered again from the UI.
    if leaving.role == Role.ADMIN and not (
        Membership.objects.select_for_update().filter(project=project, role=Role.ADMIN).exclude(pk=leaving.pk).exists()
    ):
        raise MembershipError(_("%(user)s is the last admin of %(project)s: make someone else admin first.")
                              % {"user": leaving.user, "project": project})


def membership_add(*, project: Project, username: str, role: str) -> Membership:
    if role not in Role.values:
        raise unknown_role(role)
    why = unstorable(username)
    if why:
        raise MembershipError(_("username: %(why)s") % {"why": why})
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise MembershipError(_("no user named %(name)r") % {"name": username.strip()[:150]})
    membership, created = Membership.objects.get_or_create(user=user, project=project, defaults={"role": role})
    if not created:
        raise MembershipError(_("%(user)s is already a %(role)s of %(project)s")
                              % {"user": user, "role": membership.role_name, "project": project})
    return membership


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise unknown_role(role)
    if role != Role.ADMIN:
        _keep_an_admin(membership.project, membership)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    _keep_an_admin(membership.project, membership)
    membership.delete()


@transaction.atomic
def project_create(*, name: str, slug: str, admin) -> Project:
    project = Project.objects.create(name=name, slug=slug)
    Membership.objects.create(user=admin, project=project, role=Role.ADMIN)
    return project


def project_named(slug: str | None) -> Project:
    """The project a command line names (`--project`); without one, the only
    project there is. ValueError says which exist when that is ambiguous."""
    if slug:
        found = Project.objects.filter(slug=slug).first()
        if found is None:
            raise ValueError(f"no project {slug!r}; projects: {', '.join(Project.objects.values_list('slug', flat=True))}")
        return found
    projects = list(Project.objects.all()[:2])
    if len(projects) != 1:
        raise ValueError("name the project with --project <slug>"
                         + ("" if projects else " (there is none yet: run `manage.py loaddemo` or create one)"))
    return projects[0]
