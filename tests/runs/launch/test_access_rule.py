"""Every view of a run asks runs.core.access, which narrows runs to the
current project: a member of another project gets a 404 from each of them
(the "what if…" fork included, which used to read any run directly)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agentlab.projects.models import Membership, Project, Role
from tests.htmx import hx

pytestmark = pytest.mark.django_db


@pytest.fixture
def elsewhere(other_user):
    """bob, an admin, but of another project."""
    Membership.objects.create(user=other_user, project=Project.objects.create(name="Lab", slug="lab"),
                              role=Role.ADMIN)


def _requests(run):
    return {
        "run page": ("get", reverse("runs:detail", args=[run.pk]), {}),
        "step poll": ("get", reverse("runs:steps", args=[run.pk]), hx("poller")),
        "stop": ("post", reverse("runs:stop", args=[run.pk]), hx("run-header")),
        "export": ("get", reverse("runs:export", args=[run.pk]), {}),
        "what if… fork": ("get", reverse("reviews:whatif", args=[run.pk, 2]), {}),
        "compare cell": ("get", f"{reverse('compare:cell')}?run={run.pk}&from=0&to=2", hx()),
    }


@pytest.mark.parametrize("name", ["run page", "step poll", "stop", "export", "what if… fork", "compare cell"])
def test_a_run_of_another_project_is_a_404_everywhere(client, make_run, user, other_user, elsewhere, name):
    run = make_run(steps=4, owner=user, status="finished", success=False)
    method, url, headers = _requests(run)[name]
    client.force_login(other_user)
    assert getattr(client, method)(url, headers=headers).status_code == 404
    client.force_login(user)
    assert getattr(client, method)(url, headers=headers).status_code == 200
