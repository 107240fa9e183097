"""Projects and roles beyond the access matrix (tests/test_access.py): the
switcher scopes every list, members are managed by admins, tokens write into
their project, `default` stays on, the migration and the demo."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.urls import reverse

from agentlab.projects.invites import invite_create
from agentlab.projects.models import Membership, Project, Role
from runs.core.models import Policy, Run
from runs.policies.services import PolicyProtected, policy_version_save
from tracing.store.ingest.writes import token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(project, user):
    """Project "lab", where alice is a viewer."""
    lab = Project.objects.create(name="Lab", slug="lab")
    Membership.objects.create(user=user, project=lab, role=Role.VIEWER)
    return lab


def test_the_switcher_scopes_the_run_list_and_a_run_of_the_other_project_is_a_404(auth_client, make_run, project,
                                                                                   second):
    ours = make_run(prompt="ours")
    theirs = make_run(prompt="theirs", project=second)
    body = auth_client.get(reverse("runs:list")).content.decode()
    assert f'href="/runs/{ours.pk}/"' in body and f'href="/runs/{theirs.pk}/"' not in body
    assert auth_client.get(theirs.get_absolute_url()).status_code == 404

    assert auth_client.post(reverse("projects:switch"), {"project": second.pk}).status_code == 302
    body = auth_client.get(reverse("runs:list")).content.decode()
    assert f'href="/runs/{theirs.pk}/"' in body and f'href="/runs/{ours.pk}/"' not in body
    assert auth_client.get(ours.get_absolute_url()).status_code == 404
    # In "lab" alice is a viewer: reading is fine, stopping another's run is not.
    assert auth_client.get(theirs.get_absolute_url()).status_code == 200


def test_the_switcher_refuses_a_project_the_user_is_not_in(auth_client):
    lab = Project.objects.create(name="Lab", slug="lab")
    assert auth_client.post(reverse("projects:switch"), {"project": lab.pk}).status_code == 404
    assert auth_client.post(reverse("projects:switch"), {"project": "x"}).status_code == 404


def test_the_header_shows_the_switcher_and_members_link_to_an_admin_only(client, user, member, second):
    client.force_login(user)
    body = client.get(reverse("runs:list")).content.decode()
    assert "Team (admin)" in body and "Lab (viewer)" in body and reverse("projects:members") in body
    client.force_login(member("vera", Role.VIEWER))
    body = client.get(reverse("runs:list")).content.decode()
    assert "Team (viewer)" in body and reverse("projects:members") not in body


def test_a_user_in_no_project_sees_nothing_and_launches_nothing(client, other_user, make_run):
    make_run()
    client.force_login(other_user)
    assert "no project" in client.get(reverse("runs:list")).content.decode()
    assert client.get(reverse("runs:new")).status_code == 403


def test_the_stop_button_shows_for_the_owner_and_admins_only(client, make_run, member):
    run = make_run(status="running")
    client.force_login(member("rita", Role.REVIEWER))
    assert 'class="danger">Stop<' not in client.get(run.get_absolute_url()).content.decode()
    client.force_login(member("adam", Role.ADMIN))
    assert 'class="danger">Stop<' in client.get(run.get_absolute_url()).content.decode()


def test_a_launched_run_and_its_group_land_in_the_current_project(auth_client, project, second, monkeypatch):
    from runs.launch.tasks import execute_run

    monkeypatch.setattr(execute_run, "apply_async", lambda *a, **kw: None)
    data = {"prompt": "What?", "provider": "sim", "mode": "tools", "temperature": 0.5, "max_steps": 3,
            "max_tokens": 1000, "reruns": 2}
    assert auth_client.post(reverse("runs:new"), data).status_code == 302
    runs = list(Run.objects.select_related("group"))
    assert len(runs) == 2 and {r.project_id for r in runs} == {project.pk} == {r.group.project_id for r in runs}
    auth_client.post(reverse("projects:switch"), {"project": second.pk})
    assert auth_client.post(reverse("runs:new"), data).status_code == 403  # a viewer in "lab"


# --- members ----------------------------------------------------------------------


def test_an_admin_adds_changes_and_removes_a_member(auth_client, project, django_user_model):
    carol = django_user_model.objects.create_user("carol")
    url = reverse("projects:members")
    assert auth_client.post(url, {"who": "carol", "role": "reviewer"}).status_code == 302
    membership = Membership.objects.get(user=carol, project=project)
    assert membership.role == "reviewer"
    response = auth_client.post(url, {"who": "carol", "role": "viewer"})
    assert response.status_code == 400 and "already a reviewer" in response.content.decode()
    assert auth_client.post(url, {"who": "<b>nobody</b>", "role": "viewer"}).status_code == 400
    assert "&lt;b&gt;nobody" in auth_client.post(url, {"who": "<b>nobody</b>"}).content.decode()
    assert auth_client.post(url, {"who": "carol", "role": "owner"}).status_code == 400
    auth_client.post(reverse("projects:member_role", args=[membership.pk]), {"role": "admin"})
    assert Membership.objects.get(pk=membership.pk).role == "admin"
    auth_client.post(reverse("projects:member_remove", args=[membership.pk]))
    assert not Membership.objects.filter(pk=membership.pk).exists()


def test_the_last_admin_can_neither_leave_nor_step_down(auth_client, user, project):
    mine = Membership.objects.get(user=user, project=project)
    auth_client.post(reverse("projects:member_role", args=[mine.pk]), {"role": "viewer"})
    auth_client.post(reverse("projects:member_remove", args=[mine.pk]))
    assert Membership.objects.get(pk=mine.pk).role == "admin"
    body = auth_client.get(reverse("projects:members")).content.decode()
    assert "last admin" in body


def test_the_members_page_runs_a_constant_number_of_queries(auth_client, member, user, project,
                                                           django_assert_num_queries):
    for i in range(20):
        member(f"user{i}", Role.VIEWER)
        invite_create(project=project, invitee=f"new{i}@example.com", role=Role.VIEWER, invited_by=user)
    # 1 session, 2 user, 3 memberships of the user (current project and the switcher),
    # 4 the project's members with their users, 5 the pending invites with who sent them
    with django_assert_num_queries(5):
        assert auth_client.get(reverse("projects:members")).status_code == 200


# --- tokens and the API -----------------------------------------------------------


def test_a_token_writes_into_its_project_and_reads_only_it(client, user, project, second, make_run):
    plain = token_create(user=user, project_id=second.pk, name="lab")[1]
    auth = {"Authorization": f"Bearer {plain}"}
    response = client.post(reverse("tracing:api_runs"), json.dumps({"prompt": "p"}), content_type="application/json",
                           headers=auth)
    assert response.status_code == 403  # alice is a viewer in lab: her token reads only
    Membership.objects.filter(user=user, project=second).update(role=Role.REVIEWER)
    response = client.post(reverse("tracing:api_runs"), json.dumps({"prompt": "p"}), content_type="application/json",
                           headers=auth)
    assert response.status_code == 201
    assert Run.objects.get(pk=response.json()["runs"][0]["id"]).project_id == second.pk
    team_run = make_run()
    assert client.get(reverse("tracing:api_run", args=[team_run.pk]), headers=auth).status_code == 404


def test_a_token_stops_working_when_its_member_leaves_the_project(client, user, second):
    plain = token_create(user=user, project_id=second.pk, name="lab")[1]
    url = reverse("tracing:api_runs")
    body = json.dumps({"prompt": "p"})
    Membership.objects.filter(user=user, project=second).delete()
    response = client.post(url, body, content_type="application/json", headers={"Authorization": f"Bearer {plain}"})
    assert response.status_code == 401


def test_the_token_page_lists_the_projects_tokens_in_constant_queries(auth_client, user, project, second, member,
                                                                      django_assert_num_queries):
    for i in range(5):
        token_create(user=member(f"m{i}", Role.ADMIN), project_id=project.pk, name=f"t{i}")
    token_create(user=user, project_id=second.pk, name="elsewhere")
    # 1 session, 2 user, 3 memberships of the user, 4 the project's tokens with their users
    with django_assert_num_queries(4):
        body = auth_client.get(reverse("tracing:tokens")).content.decode()
    assert "t4" in body and "elsewhere" not in body


# --- policies ---------------------------------------------------------------------


def test_the_default_policy_cannot_be_turned_off(project):
    with pytest.raises(PolicyProtected):
        policy_version_save(project_id=project.pk, name="default", config={"enabled": False})
    with pytest.raises(PolicyProtected):
        policy_version_save(project_id=project.pk, name="default", config={"ladder": {"tiers": []}})
    assert policy_version_save(project_id=project.pk, name="quiet", config={"enabled": False}).version == 1
    assert not Policy.objects.filter(name="default").exists()


def test_the_policy_form_says_why_default_stays_on(auth_client, project):
    policy_version_save(project_id=project.pk, name="default", config={})
    response = auth_client.post(reverse("policy_edit", args=["default"]),
                                {"name": "default", "use_json": "on", "config": json.dumps({"enabled": False})})
    assert response.status_code == 400 and "cannot be disabled" in response.content.decode()
    assert Policy.objects.filter(name="default").count() == 1


def test_policies_are_per_project(auth_client, project, second):
    policy_version_save(project_id=second.pk, name="lab-only", config={})
    policy_version_save(project_id=project.pk, name="default", config={})
    body = auth_client.get(reverse("policy_list")).content.decode()
    assert "default" in body and "lab-only" not in body
    assert auth_client.get(reverse("policy_edit", args=["lab-only"])).status_code == 404


def test_the_policy_list_runs_a_constant_number_of_queries(auth_client, project, user, django_assert_num_queries):
    for i in range(10):
        policy_version_save(project_id=project.pk, name=f"p{i}", config={}, created_by=user)
    # 1 session, 2 user, 3 memberships of the user, 4 the project's policies with their authors
    with django_assert_num_queries(4):
        auth_client.get(reverse("policy_list"))


# --- the migration and the demo ---------------------------------------------------


def test_the_migration_makes_existing_users_members_of_a_default_project(django_user_model):
    migration = importlib.import_module("agentlab.projects.migrations.0002_default_project")
    root = django_user_model.objects.create_superuser("root", "r@example.com", "x")
    rev = django_user_model.objects.create_user("rev")
    rev.user_permissions.add(Permission.objects.get(codename="label_interruption"))
    viewer = django_user_model.objects.create_user("viewer")
    migration.forwards(apps, None)
    roles = dict(Membership.objects.filter(project__slug="default").values_list("user__username", "role"))
    assert roles == {root.username: "admin", rev.username: "reviewer", viewer.username: "viewer"}


def test_the_runs_migration_moves_everything_into_the_default_project(db):
    migration = importlib.import_module("runs.migrations.0012_projects")
    migration.forwards(apps, None)  # nothing to move: no project is made
    assert not Project.objects.filter(slug="default").exists()


def test_the_demo_user_is_the_demo_projects_admin_not_a_superuser(client):
    call_command("loaddemo", verbosity=0)
    call_command("loaddemo", verbosity=0)  # idempotent
    demo = Membership.objects.select_related("user", "project").get(user__username="demo")
    assert demo.project.slug == "demo" and demo.role == "admin"
    assert not demo.user.is_superuser and not demo.user.is_staff
    assert Policy.objects.filter(project=demo.project, name="default").exists()
    assert demo.user.check_password("demo")
    client.force_login(demo.user)
    assert client.get(reverse("policy_edit", args=["default"])).status_code == 200
    assert client.get("/admin/").status_code == 302  # not staff
