"""The project a test's objects belong to, for tests that are not about projects.

conftest's `project` fixture is "team" (alice is its admin); these find it (or
make it) without every test asking for the fixture.
"""

from __future__ import annotations

from agentlab.projects.models import Membership, Project, Role


def team() -> Project:
    return Project.objects.get_or_create(slug="team", defaults={"name": "Team"})[0]


def project_of(user) -> Project:
    """The user's first project; a user in none (bob) gets one of their own, as its admin."""
    membership = Membership.objects.filter(user=user).select_related("project").first()
    if membership is not None:
        return membership.project
    own = Project.objects.create(name=f"{user.username}'s", slug=f"own-{user.pk}")
    Membership.objects.create(user=user, project=own, role=Role.ADMIN)
    return own
