from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.launch.models import Run
from tracing.models import Step

pytestmark = pytest.mark.django_db
EVAL = Path(__file__).resolve().parents[3].parent / "shared" / "eval"

GOOD = {
    "source": "mine", "run_id": "r1", "task": "Where was the author of The Salt Lantern born?", "success": False,
    "steps": [
        {"index": 0, "kind": "action", "content": "Search[The Salt Lantern]", "tool": "Search", "args": "The Salt Lantern"},
        {"index": 1, "kind": "observation", "content": "The Salt Lantern is a novel by Orren Vasquel, born in Calder Bay.",
         "tool": "Search"},
        {"index": 2, "kind": "thought", "content": "So the author was born in Haiyan, as the observation says."},
        {"index": 3, "kind": "final", "content": "Haiyan", "tool": "Finish", "args": "Haiyan"},
    ],
    "meta": {"model": "text-davinci-002"},
}


def upload(auth_client, text: str):
    return auth_client.post(reverse("runs:import"), {"file": SimpleUploadedFile("runs.jsonl", text.encode()), "source": ""})


def test_good_lines_are_imported_with_signals_and_anchor_break(auth_client):
    response = upload(auth_client, json.dumps(GOOD) + "\n")
    assert response.status_code == 200
    run = Run.objects.get()
    assert run.provider == "import" and run.source == "mine" and run.model_name == "text-davinci-002"
    assert run.step_count == 4 and run.success is False and run.final_answer == "Haiyan"
    assert run.first_anchor_break is not None
    assert "Haiyan" in run.anchor_reason
    assert Step.objects.filter(run=run).count() == 4
    page = auth_client.get(run.get_absolute_url()).content.decode()
    assert "anchor-break" in page and "Lost anchor here" in page


def test_bad_lines_are_rejected_with_line_numbers_and_good_ones_kept(auth_client):
    lines = [
        json.dumps(GOOD),
        "{not json",
        json.dumps({**GOOD, "steps": [{"index": 0, "kind": "dance"}]}),
        json.dumps({**GOOD, "run_id": ""}),
        "",
        json.dumps([1, 2]),
        json.dumps({**GOOD, "run_id": "r2"}),
    ]
    response = upload(auth_client, "\n".join(lines))
    body = response.content.decode()
    assert response.status_code == 200
    assert Run.objects.count() == 2
    for lineno in (2, 3, 4, 6):
        assert f"line {lineno}:" in body
    assert "kind must be one of" in body


def test_a_file_of_only_bad_lines_is_400_and_imports_nothing(auth_client):
    response = upload(auth_client, "nope\n\xff\n")
    assert response.status_code == 400
    assert Run.objects.count() == 0


def test_odd_runs_do_not_crash(auth_client):
    odd = [
        {**GOOD, "run_id": "no-obs", "steps": [{"index": 0, "kind": "thought", "content": "hm"}]},
        {**GOOD, "run_id": "empty-thought", "steps": [{"index": 0, "kind": "observation", "content": "x" * 500_000},
                                                       {"index": 1, "kind": "thought", "content": ""}]},
        {**GOOD, "run_id": "zh", "task": "《盐灯》的作者出生在哪里？", "steps": [
            {"index": 0, "kind": "observation", "content": "作者出生于白沙市，成长于青石镇。"},
            {"index": 5, "kind": "thought", "content": "作者出生在青石镇。"}]},
        {**GOOD, "run_id": "no-steps", "steps": []},
    ]
    response = upload(auth_client, "\n".join(json.dumps(o, ensure_ascii=False) for o in odd))
    assert response.status_code == 200
    assert Run.objects.count() == 4


def test_the_upload_page_requires_login(client):
    assert client.get(reverse("runs:import")).status_code == 302


@pytest.mark.skipif(not EVAL.exists(), reason="shared/eval not found")
def test_the_command_imports_a_real_source(tmp_path):
    call_command("importjsonl", str(EVAL / "react_exemplars" / "runs.jsonl"), verbosity=0)
    assert Run.objects.filter(source="react_exemplars").count() == 27
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(CommandError, match="1 line"):
        call_command("importjsonl", str(bad))
    assert Run.objects.filter(source="mine").count() == 1


def test_loaddemo_is_idempotent_and_seeds_demo_runs_once(db):
    call_command("loaddemo", runs=3, verbosity=0)
    call_command("loaddemo", runs=3, verbosity=0)
    from runs.launch.models import Document, Task
    from runs.policies.models import Policy

    assert Task.objects.count() >= 20 and Document.objects.exists()
    assert Policy.objects.filter(name="default").count() == 1
    assert Run.objects.count() == 3
    assert all(r.status in ("finished", "stopped") for r in Run.objects.all())


def test_analyse_recomputes_signals_and_anchoring(db):
    call_command("importjsonl", *[str(p) for p in [EVAL / "react_exemplars" / "runs.jsonl"]], verbosity=0) \
        if EVAL.exists() else None
    upload_run = Run.objects.create(prompt="Where was he born?", status="finished")
    from tracing.recorder import record_step
    from tracing.steps import Step as StepRecord

    record_step(upload_run.pk, StepRecord(index=0, kind="observation", text="He was born in Calder Bay."))
    record_step(upload_run.pk, StepRecord(index=1, kind="thought", text="He was born in Haiyan."))
    call_command("analyse", run=[upload_run.pk], verbosity=0)
    upload_run.refresh_from_db()
    assert upload_run.first_anchor_break == 1
    assert "signals" in Step.objects.get(run=upload_run, index=0).meta
    with pytest.raises(CommandError, match="say which runs"):
        call_command("analyse")


def test_an_imported_run_is_judged_against_one_goal_everywhere(user, monkeypatch):
    """The import, a later re-analysis and what-if replay an imported run with the
    goal its trajectory gives (task + the environment's opening description),
    as `python -m tracing.detect` does."""
    from runs.imports import services as imports
    from runs.launch import analysis
    from runs.launch.models import Run
    from runs.whatif import execution
    from runs.whatif.services import whatif_create
    from tracing.steps import trajectory_from_dict

    line = {"source": "alfworld", "run_id": "a1", "task": "put a clean mug on the desk", "success": False,
            "meta": {"initial_observation": "You are in a kitchen. You see a mug and a sink."},
            "steps": [{"index": 0, "kind": "action", "content": "go to sink", "args": "sink"},
                      {"index": 1, "kind": "observation", "content": "You arrive at the sink."}]}
    expected = trajectory_from_dict(line).goal
    assert "kitchen" in expected
    seen = []
    real_analyse = imports.analyse

    def spy(records, *, task, **kwargs):
        seen.append(task)
        return real_analyse(records, task=task, **kwargs)

    monkeypatch.setattr(imports, "analyse", spy)
    monkeypatch.setattr(analysis, "analyse", spy)
    run_id = imports.import_lines([json.dumps(line)], owner=user).run_ids[0]
    analysis.run_analyse(run_id, recompute_signals=True)
    assert Run.objects.get(pk=run_id).goal == expected
    real_evaluate = execution.evaluate

    def evaluate(runs, *args, **kwargs):
        runs = list(runs)
        seen.extend(r.goal for r in runs)
        return real_evaluate(runs, *args, **kwargs)

    monkeypatch.setattr(execution, "evaluate", evaluate)
    monkeypatch.setattr("runs.whatif.tasks.execute_whatif.apply_async", lambda *a, **k: None)
    execution.whatif_execute(whatif_create(user=user, config={}).pk)
    assert seen == [expected, expected, expected]
