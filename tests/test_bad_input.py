"""The bad input of the drills (issue 13, item 7): each answers a 4xx or a form
error naming the problem, never a 500, and writes nothing half."""

from __future__ import annotations

import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from runs.core.models import Policy, RerunGroup, Run
from runs.reviews.models import ReviewItem, ReviewLabel
from runs.whatif.models import WhatIfJob
from tests.projects import project_of
from tracing.store.ingest.writes import token_create
from tracing.store.models import ApiToken, Step

pytestmark = pytest.mark.django_db

HUGE = "7" * 5000
DEEP = "[" * 200_000


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="drill")[1]


@pytest.fixture
def raw_client():
    return Client(raise_request_exception=False)


def _post(client, token, url: str, body: str):
    return client.generic("POST", url, body.encode("utf-8", "surrogatepass"), content_type="application/json",
                          HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def live_run(user):
    return Run.objects.create(owner=user, project=project_of(user), prompt="p", provider="import", source="api",
                              status="running")


# --- the JSON API ------------------------------------------------------------------


@pytest.mark.parametrize("body", [
    '{"prompt": "x", "steps": [{"index": HUGE, "kind": "thought"}]}',
    '{"prompt": "x", "metadata": {"n": HUGE}}',
    '{"runs": [{"prompt": "ok"}, {"prompt": "x", "steps": [{"index": 0, "kind": "thought", "meta": {"n": -HUGE}}]}]}',
])
def test_api_run_creation_refuses_an_integer_of_5000_digits(raw_client, token, body):
    response = _post(raw_client, token, "/api/runs", body.replace("HUGE", HUGE))
    assert response.status_code == 400
    assert "an integer of 5,000 digits (at most 4,300)" in response.json()["error"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize("path, body", [
    ("steps", '{"steps": [{"index": 0, "kind": "thought", "prompt_tokens": HUGE}]}'),
    ("finish", '{"status": "finished", "final_answer": "a", "success": HUGE}'),
])
def test_api_steps_and_finish_refuse_an_integer_of_5000_digits(raw_client, token, live_run, path, body):
    response = _post(raw_client, token, f"/api/runs/{live_run.pk}/{path}", body.replace("HUGE", HUGE))
    assert response.status_code == 400 and "5,000 digits" in response.json()["error"]
    live_run.refresh_from_db()
    assert live_run.status == "running" and not Step.objects.filter(run=live_run).exists()


@pytest.mark.parametrize("escape", ["\\udc00", "\\udfff", "\\udc80", "\\ud800"])
def test_api_refuses_lone_surrogates_in_run_step_and_finish_text(raw_client, token, live_run, escape):
    response = _post(raw_client, token, "/api/runs", '{"prompt": "a' + escape + '"}')
    assert response.status_code == 400
    assert "body.prompt contains a lone UTF-16 surrogate" in response.json()["error"]
    steps = _post(raw_client, token, f"/api/runs/{live_run.pk}/steps",
                  '{"steps": [{"index": 0, "kind": "thought", "meta": {"note": "' + escape + '"}}]}')
    assert steps.status_code == 400 and "body.steps[0].meta.note" in steps.json()["error"]
    finish = _post(raw_client, token, f"/api/runs/{live_run.pk}/finish", '{"final_answer": "x' + escape + '"}')
    assert finish.status_code == 400 and "body.final_answer" in finish.json()["error"]
    assert Run.objects.count() == 1 and not Step.objects.exists()
    live_run.refresh_from_db()
    assert live_run.status == "running"


def test_api_keeps_nul_in_run_level_fields_as_a_replacement_character(raw_client, token, live_run):
    response = _post(raw_client, token, "/api/runs",
                     '{"prompt": "a\\u0000b", "model": "m\\u0000", "finish": {"final_answer": "f\\u0000"},'
                     ' "steps": [{"index": 0, "kind": "thought", "text": "t\\u0000", "meta": {"k\\u0000": "\\u0000"}}]}')
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["runs"][0]["id"])
    assert (run.prompt, run.model_name, run.final_answer) == ("a\ufffdb", "m\ufffd", "f\ufffd")
    step = Step.objects.get(run=run)
    assert step.text == "t\ufffd" and step.meta["k\ufffd"] == "\ufffd"
    finish = _post(raw_client, token, f"/api/runs/{live_run.pk}/finish", '{"final_answer": "x\\u0000y"}')
    assert finish.status_code == 200
    live_run.refresh_from_db()
    assert live_run.final_answer == "x\ufffdy"


def test_api_refuses_deep_nesting(raw_client, token):
    response = _post(raw_client, token, "/api/runs", DEEP)
    assert response.status_code == 400 and "nested too deeply" in response.json()["error"]


# --- the forms -----------------------------------------------------------------


@pytest.fixture
def admin(user):
    user.is_superuser = True
    user.is_staff = True
    user.save()
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("config, message", [
    ('{"thresholds": {"novelty_min": HUGE}}', "an integer of 5,000 digits"),
    ('{"windows": {"stagnation": HUGE}}', "an integer of 5,000 digits"),
    (DEEP, "nested too deeply"),
    ('{"windows": {"stagnation": 1e300}}', "must be &lt;= 2,147,483,647"),
    ('{"ladder": {"stop_streak": 2147483648}}', "must be &lt;= 2,147,483,647"),
    ('{"a": "\\udc00"}', "lone UTF-16 surrogate"),
])
def test_the_policy_form_refuses_what_json_cannot_hold(admin, config, message):
    response = admin.post("/policies/new/", {"name": "p1", "use_json": "on", "config": config.replace("HUGE", HUGE)})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Policy.objects.exists()


def test_the_policy_form_refuses_a_version_past_an_integer_column(admin):
    response = admin.post("/policies/new/", {"name": "p1", "use_json": "on", "config": '{"version": 2147483648}'})
    assert response.status_code == 400 and not Policy.objects.exists()


@pytest.mark.parametrize("config, sweep, message", [
    (DEEP, "", "nested too deeply"),
    ('{"ladder": {"stop_streak": HUGE}}', "", "an integer of 5,000 digits"),
    ("[]", "ladder.stop_streak", "the policy must be a JSON object"),
    ("[]", "", "the policy must be a JSON object"),
    ("7", "windows.stagnation", "the policy must be a JSON object"),
    ('{"ladder": 5}', "ladder.stop_streak", "policy field &#x27;ladder&#x27;: must be an object"),
    ('{"ladder": []}', "ladder.stop_streak", "policy field &#x27;ladder&#x27;: must be an object"),
])
def test_the_whatif_form_refuses_what_it_cannot_replay(admin, config, sweep, message):
    response = admin.post("/whatif/", {"config": config.replace("HUGE", HUGE), "sweep_path": sweep,
                                       "sweep_values": "6, 8"})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not WhatIfJob.objects.exists()


def test_the_whatif_form_refuses_sweep_values_past_a_float(admin):
    response = admin.post("/whatif/", {"config": "{}", "sweep_path": "ladder.stop_streak",
                                       "sweep_values": "6, 1.5e999"})
    assert response.status_code == 400 and "finite numbers only" in response.content.decode()
    assert not WhatIfJob.objects.exists()


@pytest.mark.parametrize("field", ["prompt", "model_name"])
def test_the_new_run_form_refuses_nul(admin, field):
    data = {"prompt": "What is 2 + 2?", "provider": "openai", "model_name": "gpt", "mode": "tools",
            "temperature": "0.7", "max_steps": "5", "max_tokens": "1000", "reruns": "1"}
    data[field] = "a\x00b"
    response = admin.post("/runs/new/", data)
    assert response.status_code == 400
    assert "Null characters are not allowed" in response.content.decode()
    assert not Run.objects.exists()


def test_nul_in_a_token_name_is_a_form_error(admin):
    response = admin.post("/settings/tokens/", {"name": "ci\x00"})
    assert response.status_code == 400 and "NUL character" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_nul_in_a_group_name_is_refused(admin, make_run):
    run, other = make_run(steps=1), make_run(steps=1)
    response = admin.post("/compare/save/", {"name": "g\x00", "runs": [f"{run.pk},{other.pk}"]})
    assert response.status_code == 400 and "NUL character" in response.content.decode()
    assert not RerunGroup.objects.exists()
    run.refresh_from_db()
    assert run.group_id is None


def test_nul_in_a_review_note_is_refused(admin, make_run):
    run = make_run(steps=4)
    item = ReviewItem.objects.create(run=run, step_index=3, detector="repetition", tier="stop")
    response = admin.post(f"/reviews/{run.pk}/3/label/", {"value": "justified", "note": "n\x00"})
    assert response.status_code == 400 and "NUL character" in response.content.decode()
    assert not ReviewLabel.objects.exists()
    item.refresh_from_db()
    assert item.label_count == 0


def test_nul_in_a_query_lookup_is_not_a_500(admin):
    # Postgres refuses NUL even as a lookup value: these pages never send one to it.
    assert admin.get("/runs/new/", {"task": "a\x00"}).status_code == 404
    assert admin.get("/whatif/", {"policy": "default\x00"}).status_code == 200


# --- the JSONL import ------------------------------------------------------------

GOOD = '{"run_id": "RID", "task": "t", "steps": [{"index": 0, "kind": "thought", "content": "x"}]}'
DRILL = [
    GOOD.replace("RID", "first"),
    '{"run_id": "big-index", "task": "t", "steps": [{"index": 2147483648, "kind": "thought", "content": "x"}]}',
    '{"run_id": "big-reward", "task": "t", "reward": ' + HUGE + ', "steps": []}',
    '{"run_id": "nul", "task": "t", "steps": [{"index": 0, "kind": "thought", "content": "x", "meta": {"a": "\\u0000"}}]}',
    '{"run_id": "surrogate", "task": "t", "steps": [{"index": 0, "kind": "thought", "content": "x\\udc00"}]}',
    '{"run_id": "long-tool", "task": "t", "steps": [{"index": 0, "kind": "action", "tool": "' + "t" * 200 + '"}]}',
    '{"run_id": "float-reward", "task": "t", "reward": 1' + "0" * 400 + ', "steps": []}',
    '{"run_id": "deep", "task": "t", "meta": ' + "[" * 5000 + "]" * 5000 + ', "steps": []}',
    GOOD.replace("RID", "last"),
]
DRILL_ERRORS = {
    2: "steps[0].index must be an integer from 0 to 2147483647",
    3: "an integer of 5,000 digits (at most 4,300)",
    5: "line.steps[0].content contains a lone UTF-16 surrogate",
    6: "steps[0].tool is longer than 120 characters",
    7: "'reward' is too large a number",
    8: "nested too deeply",
}


def _drill_file() -> bytes:
    return ("\n".join(DRILL) + "\n").encode()


def _assert_drill_stored() -> None:
    assert sorted(Run.objects.values_list("source_run_id", flat=True)) == ["first", "last", "nul"]
    for run in Run.objects.all():
        assert Step.objects.filter(run=run).count() == run.step_count == 1
    assert Step.objects.get(run__source_run_id="nul").meta["a"] == "\ufffd"


def test_the_import_page_stores_good_lines_and_names_each_bad_one(admin):
    response = admin.post("/runs/import/", {"file": SimpleUploadedFile("drill.jsonl", _drill_file())})
    assert response.status_code == 200
    page = response.content.decode()
    for lineno, message in DRILL_ERRORS.items():
        assert re.search(rf"<li>line {lineno}: [^<]*{re.escape(message)}", page.replace("&#x27;", "'")), lineno
    assert "whole or not at all" in page
    _assert_drill_stored()


def test_the_import_command_reports_line_numbers_without_a_traceback(user, tmp_path):
    path = tmp_path / "drill.jsonl"
    path.write_bytes(_drill_file())
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="6 line\\(s\\) rejected; the others were imported"):
        call_command("importjsonl", str(path), stdout=out, stderr=err)
    lines = err.getvalue().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:{n}" for n in DRILL_ERRORS]
    for line, message in zip(lines, DRILL_ERRORS.values(), strict=True):
        assert message in line
    assert "Traceback" not in err.getvalue() + out.getvalue()
    assert "imported 3 runs, rejected 6 lines" in out.getvalue()
    _assert_drill_stored()


def test_a_line_that_fails_unexpectedly_costs_only_itself(user, monkeypatch):
    from runs.imports import services

    real = services.import_trajectory

    def flaky(traj, **kwargs):
        if traj.run_id == "boom":
            raise KeyError("a bug")
        return real(traj, **kwargs)

    monkeypatch.setattr(services, "import_trajectory", flaky)
    result = services.import_lines([GOOD.replace("RID", "a"), GOOD.replace("RID", "boom"), GOOD.replace("RID", "b")],
                                   owner=user, project_id=project_of(user).pk)
    assert len(result.run_ids) == 2
    assert result.errors == [(2, "could not be imported (KeyError); nothing of it was stored")]
