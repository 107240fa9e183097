"""Failures by layer: the guess stored when a run is analysed or imported, the
queue where reviewers confirm or correct it, and the breakdown with agreement."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.core.models import Run
from runs.failures.models import LayerLabel
from runs.failures.selectors import breakdown
from runs.launch.run_analysis import run_analyse
from tests.projects import team
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db


def _answered_untested(**fields) -> Run:
    """A run that hands in an answer before using any tool: termination, step 1."""
    run = Run.objects.create(prompt="What is the capital of Freedonia?", project=team(), **fields)
    record_step(run.pk, StepRecord(index=0, kind="thought", text="I am sure it is Sylvania City."))
    record_step(run.pk, StepRecord(index=1, kind="final", text="Sylvania City"))
    return run


@pytest.fixture
def reviewer(user):
    return user  # alice: the admin of the team project


def test_a_failed_run_gets_a_layer_when_analysed():
    run = _answered_untested(status="finished", success=False)
    run_analyse(run.pk)
    run.refresh_from_db()
    assert run.attribution["layer"] == "termination"
    assert run.attribution["rule"] == "untested" and run.attribution["reason"]


@pytest.mark.parametrize("fields", [
    {"status": "finished", "success": True},
    {"status": "finished", "success": None},  # nobody scored it
    {"status": "stopped", "success": None, "stopped_by": "user"},
    {"status": "error", "success": None},
])
def test_runs_that_did_not_fail_get_none(fields):
    run = _answered_untested(**fields)
    run_analyse(run.pk)
    run.refresh_from_db()
    assert run.attribution == {}


def test_an_imported_failed_run_gets_a_layer(auth_client):
    line = {"run_id": "x1", "source": "t", "task": "What is the capital of Freedonia?", "success": False,
            "steps": [{"index": 0, "kind": "thought", "text": "Surely Sylvania City."},
                      {"index": 1, "kind": "final", "text": "Sylvania City"}]}
    from runs.imports.services import import_lines
    import_lines([json.dumps(line)], owner=None, project_id=team().pk)
    run = Run.objects.get(source_run_id="x1")
    assert run.success is False and run.attribution["layer"] == "termination"


def test_the_queue_lists_failed_runs_and_the_pane_shows_the_guess(auth_client):
    failed = _answered_untested(status="finished", success=False)
    ok = _answered_untested(status="finished", success=True)
    run_analyse(failed.pk)
    page = auth_client.get(reverse("failures:queue")).content.decode()
    assert f'data-item="{failed.pk}"' in page and f'data-item="{ok.pk}"' not in page
    assert "termination" in page
    pane = auth_client.get(reverse("failures:item", args=[failed.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "answer handed in" in pane.lower() or "before any tool" in pane.lower()
    assert f'href="/runs/{failed.pk}/#step-' in pane


def test_a_reviewer_confirms_or_corrects_and_agreement_follows(client, reviewer):
    client.force_login(reviewer)
    a = _answered_untested(status="finished", success=False)
    b = _answered_untested(status="finished", success=False)
    for run in (a, b):
        run_analyse(run.pk)
    assert client.post(reverse("failures:label", args=[a.pk]), {"layer": "termination"}).status_code == 200
    response = client.post(reverse("failures:label", args=[b.pk]), {"layer": "plan", "note": "wrong entity"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and f'id="fr-{b.pk}"' in response.content.decode()  # the row, out of band
    figures = breakdown(Run.objects.all())
    assert (figures.labelled, figures.agreed) == (2, 1)
    rows = {row.key: row for row in figures.rows}
    assert rows["termination"].guessed == 2 and rows["plan"].labelled == 1 and rows["plan"].confirmed == 0
    # Correcting again replaces the label: one per run.
    client.post(reverse("failures:label", args=[b.pk]), {"layer": "termination"})
    assert LayerLabel.objects.count() == 2 and breakdown(Run.objects.all()).agreed == 2
    page = client.get(reverse("dashboard")).content.decode()
    assert "Failures by layer" in page and "agreeing with the guess on 2 (100%)" in page


def test_labelling_needs_the_reviewer_role(client, member):
    client.force_login(member("vera", "viewer"))
    run = _answered_untested(status="finished", success=False)
    response = client.post(reverse("failures:label", args=[run.pk]), {"layer": "plan"})
    assert response.status_code == 403 and not LayerLabel.objects.exists()


@pytest.mark.parametrize("layer", ["", "Plan", "<script>", "x" * 5000])
def test_an_unknown_layer_is_a_400_and_nothing_is_stored(client, reviewer, layer):
    client.force_login(reviewer)
    run = _answered_untested(status="finished", success=False)
    response = client.post(reverse("failures:label", args=[run.pk]), {"layer": layer})
    assert response.status_code == 400 and response["Content-Type"].startswith("text/plain")
    assert not LayerLabel.objects.exists()


def test_a_run_that_did_not_fail_cannot_be_labelled(client, reviewer):
    client.force_login(reviewer)
    run = _answered_untested(status="finished", success=True)
    assert client.post(reverse("failures:label", args=[run.pk]), {"layer": "plan"}).status_code == 400


def test_untrusted_text_is_escaped_in_the_queue_and_pane(auth_client):
    run = _answered_untested(status="finished", success=False, model_name="<img src=x onerror=alert(1)>")
    Run.objects.filter(pk=run.pk).update(attribution={"layer": "plan", "step": 0, "reason": "<script>x()</script>",
                                                      "rule": "<b>", "basis": "cause"})
    for url in (reverse("failures:queue"), reverse("failures:item", args=[run.pk])):
        body = auth_client.get(url).content.decode()
        assert "<script>x()" not in body and "<img src=x" not in body


def test_the_queue_is_a_fixed_number_of_queries(auth_client, django_assert_max_num_queries):
    for _ in range(30):
        run = _answered_untested(status="finished", success=False)
        LayerLabel.objects.create(run=run, layer="plan", guessed="termination")
    with django_assert_max_num_queries(12):
        assert auth_client.get(reverse("failures:queue")).status_code == 200


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.dictionaries(st.sampled_from(["layer", "state", "before", "item"]), st.text(max_size=30)))
def test_junk_filters_never_answer_500(auth_client, params):
    response = auth_client.get(reverse("failures:queue"), params)
    assert response.status_code in (200, 400)
