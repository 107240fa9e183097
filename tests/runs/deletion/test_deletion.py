"""Deleting a run, a project, by retention, and through the API: everything
recorded of it goes, and each deletion is recorded (issue 28)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agentlab.projects.models import Project
from runs.approvals.models import Approval
from runs.core.models import Run
from runs.reviews.models import ReviewItem
from runs.reviews.services import review_items_sync
from tracing.core.model_calls import ModelCallRecord
from tracing.core.steps import Step as StepRecord
from tracing.store import step_deletion as deletion
from tracing.store.call_store import CallRecorder
from tracing.store.ingest.writes import token_create
from tracing.store.models import CallMessage, DeletionRecord, ModelCall, Retention, Step
from tracing.store.recorder import record_step
from tracing.store.step_deletion import retention_sweep

pytestmark = pytest.mark.django_db


def _full_run(make_run, user, text: str = "secret prompt"):
    run = make_run(steps=6, owner=user, status="stopped")
    record_step(run.pk, StepRecord(index=6, kind="intervention", text="Change approach.",
                                   meta={"detector": "repetition", "tier": "hint", "evidence": {}}))
    review_items_sync(run.pk)
    Approval.objects.create(run=run, step_index=4, tool="send_message", args={"text": "hi"},
                            expires_at=timezone.now() + timedelta(hours=1))
    CallRecorder(run.pk)(ModelCallRecord(step_index=0, api="chat", params={"model": "sim"},
                                         messages=[{"role": "system", "content": "shared system prompt"},
                                                   {"role": "user", "content": text}]))
    return run


def test_an_admin_deletes_a_run_and_all_of_it_goes(auth_client, make_run, user):
    run = _full_run(make_run, user)
    kept = _full_run(make_run, user, text="another prompt")
    assert auth_client.get(f"/deletions/run/{run.pk}/").status_code == 200
    response = auth_client.post(f"/deletions/run/{run.pk}/")
    assert response.status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()
    for model in (Step, ModelCall, ReviewItem, Approval):
        assert not model.objects.filter(run_id=run.pk).exists(), model
        assert model.objects.filter(run_id=kept.pk).exists(), model
    bodies = [m.body for m in CallMessage.objects.all()]
    assert {"role": "user", "content": "secret prompt"} not in bodies  # the prompt only it sent
    assert {"role": "system", "content": "shared system prompt"} in bodies  # still the other run's
    record = DeletionRecord.objects.get()
    assert (record.what, record.target, record.username, record.project_name) == ("run", f"run {run.pk}", "alice",
                                                                                   "Team")
    assert record.counts["Run"] == 1 and record.counts["Step"] == 7 and record.counts["ModelCall"] == 1
    assert record.counts["ReviewItem"] == 1 and record.counts["Approval"] == 1 and record.counts["CallMessage"] == 1
    page = auth_client.get("/deletions/").content.decode()
    assert f"run {run.pk}" in page and "alice" in page


def test_steps_go_in_batches(make_run, user, monkeypatch):
    monkeypatch.setattr(deletion, "STEP_BATCH", 3)
    run = make_run(steps=10, owner=user)
    record = deletion.runs_delete(run_ids=[run.pk], user=user, project=run.project)
    assert record.counts["Step"] == 10 and not Step.objects.exists()


def test_a_fork_goes_with_its_run(make_run, user):
    run = make_run(steps=2, owner=user)
    fork = make_run(steps=3, owner=user, parent=run, fork_from=1)
    record = deletion.runs_delete(run_ids=[run.pk], user=user, project=run.project)
    assert not Run.objects.filter(pk__in=[run.pk, fork.pk]).exists()
    assert record.counts["Run"] == 2 and record.counts["Step"] == 5


def test_a_reviewer_cannot_delete(client, make_run, member):
    run = make_run(steps=1)
    client.force_login(member("rita", "reviewer"))
    assert client.post(f"/deletions/run/{run.pk}/").status_code == 403
    assert Run.objects.filter(pk=run.pk).exists() and not DeletionRecord.objects.exists()


def test_the_api_deletes_a_run_with_an_admins_token(client, make_run, user, member, project):
    run = _full_run(make_run, user)
    viewer = token_create(user=member("vera", "viewer"), project_id=project.pk, name="v")[1]
    response = client.delete(f"/api/runs/{run.pk}", headers={"Authorization": f"Bearer {viewer}"})
    assert response.status_code == 403 and "needs the admin role" in response.json()["error"]
    admin = token_create(user=user, project_id=project.pk, name="a")[1]
    response = client.delete(f"/api/runs/{run.pk}", headers={"Authorization": f"Bearer {admin}"})
    assert response.status_code == 200 and response.json()["counts"]["Step"] == 7
    assert not Run.objects.filter(pk=run.pk).exists()
    assert client.delete(f"/api/runs/{run.pk}", headers={"Authorization": f"Bearer {admin}"}).status_code == 404
    assert DeletionRecord.objects.get().username == "alice"


def test_a_project_is_deleted_only_when_confirmed(auth_client, make_run, user, project):
    _full_run(make_run, user)
    response = auth_client.post("/deletions/project/", {"confirm": "nope"})
    assert response.status_code == 400 and Project.objects.filter(pk=project.pk).exists()
    assert "Type the project" in response.content.decode()
    response = auth_client.post("/deletions/project/", {"confirm": project.slug})
    assert response.status_code == 302
    assert not Project.objects.filter(pk=project.pk).exists() and not Run.objects.exists()
    assert not Step.objects.exists() and not ModelCall.objects.exists()
    record = DeletionRecord.objects.get()
    assert record.what == "project" and record.project_name == "Team" and record.counts["Run"] == 1
    assert record.counts["Membership"] == 1


def test_retention_deletes_old_runs_in_batches_and_leaves_live_ones(auth_client, make_run, user, project,
                                                                     monkeypatch):
    monkeypatch.setattr(deletion, "RETENTION_RUN_BATCH", 2)
    assert auth_client.post("/deletions/", {"keep_days": "0"}).status_code == 400
    assert auth_client.post("/deletions/", {"keep_days": "30"}).status_code == 302
    assert Retention.objects.get(project=project).keep_days == 30
    old = [make_run(steps=2, owner=user) for _ in range(3)]
    live = make_run(steps=1, owner=user, status="running")
    new = make_run(steps=1, owner=user)
    Run.objects.filter(pk__in=[r.pk for r in [*old, live]]).update(created_at=timezone.now() - timedelta(days=40))
    records = retention_sweep()
    assert [r.counts["Run"] for r in records] == [2, 1]
    assert set(Run.objects.values_list("pk", flat=True)) == {live.pk, new.pk}
    assert all(r.what == "retention" and r.username == "" for r in records)
    assert auth_client.post("/deletions/", {"keep_days": ""}).status_code == 302
    assert not Retention.objects.exists()
