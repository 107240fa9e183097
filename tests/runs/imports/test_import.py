from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from runs.core.models import Run
from tests.eval_data import EVAL_DIR, eval_runs
from tests.projects import project_of
from tracing.store.models import Step

pytestmark = pytest.mark.django_db

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


def test_the_command_imports_a_real_source(tmp_path, project):
    call_command("importjsonl", str(eval_runs("react_exemplars")), verbosity=0)  # the only project
    assert Run.objects.filter(source="react_exemplars").count() == 27
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(CommandError, match="1 line"):
        call_command("importjsonl", str(bad))
    assert Run.objects.filter(source="mine").count() == 1


def test_loaddemo_is_idempotent_and_seeds_demo_runs_once(db):
    call_command("loaddemo", runs=3, verbosity=0)
    call_command("loaddemo", runs=3, verbosity=0)
    from runs.core.models import Document, Policy, Task

    assert Task.objects.count() >= 20 and Document.objects.exists()
    assert Policy.objects.filter(name="default").count() == 1
    assert Run.objects.count() == 3
    assert all(r.status in ("finished", "stopped") for r in Run.objects.all())


def test_analyse_recomputes_signals_and_anchoring(project):
    call_command("importjsonl", *[str(p) for p in [EVAL_DIR / "react_exemplars" / "runs.jsonl"]], verbosity=0) \
        if EVAL_DIR.is_dir() else None
    upload_run = Run.objects.create(prompt="Where was he born?", status="finished", project=project)
    from tracing.core.steps import Step as StepRecord
    from tracing.store.recorder import record_step

    record_step(upload_run.pk, StepRecord(index=0, kind="observation", text="He was born in Calder Bay."))
    record_step(upload_run.pk, StepRecord(index=1, kind="thought", text="The observation says he was born in Haiyan."))
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
    from runs.core.models import Run
    from runs.imports import services as imports
    from runs.launch import run_analysis as analysis
    from runs.whatif import sweep_job as execution
    from runs.whatif.services import whatif_create
    from tracing.core.steps import trajectory_from_dict

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
    run_id = imports.import_lines([json.dumps(line)], project_id=project_of(user).pk, owner=user).run_ids[0]
    analysis.run_analyse(run_id, recompute_signals=True)
    assert Run.objects.get(pk=run_id).goal == expected
    real_evaluate = execution.evaluate

    def evaluate(runs, *args, **kwargs):
        runs = list(runs)
        seen.extend(r.goal for r in runs)
        return real_evaluate(runs, *args, **kwargs)

    monkeypatch.setattr(execution, "evaluate", evaluate)
    monkeypatch.setattr("runs.whatif.tasks.execute_whatif.apply_async", lambda *a, **k: None)
    execution.whatif_execute(whatif_create(user=user, project_id=project_of(user).pk, config={}).pk)
    assert seen == [expected, expected, expected]


# -- the page explains the format itself (issue 16, item 12) -----------------


def test_the_page_shows_an_example_line_and_links_the_sample_file(auth_client):
    import html
    import re

    body = auth_client.get(reverse("runs:import")).content.decode()
    assert "README" not in body and "shared/eval" not in body  # nothing the user does not have
    example = html.unescape(re.search(r'<pre class="example-line">(.*?)</pre>', body, re.S).group(1))
    line = json.loads(example)
    assert {"run_id", "task", "steps"} <= line.keys()
    assert reverse("runs:import_sample") in body


def test_the_sample_file_downloads_and_imports_without_a_rejected_line(auth_client):
    response = auth_client.get(reverse("runs:import_sample"))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    text = response.content.decode()
    assert 2 <= len(text.splitlines()) <= 5
    imported = upload(auth_client, text)
    assert imported.status_code == 200
    assert "rejected" not in imported.content.decode()
    assert Run.objects.count() == len(text.splitlines())


def test_api_tokens_are_in_the_menu(auth_client):
    body = auth_client.get(reverse("runs:list")).content.decode()
    nav = body.split("<nav>", 1)[1].split("</nav>", 1)[0]
    assert f'href="{reverse("tracing:tokens")}"' in nav and "API tokens" in nav
# --- roles, context, outcome, idempotency, unknowns (issue 11, issue 16 item 13) ----------

DIALOGUE = {
    "source": "shop", "run_id": "d1", "task": "Refund order #W1", "success": None, "reward": 1.0,
    "context": {"system": "Refunds go to the original payment method. <script>x</script>",
                "tools": [{"name": "get_order", "parameters": {"id": "string"}}]},
    "steps": [
        {"index": 0, "kind": "observation", "tool": "user", "content": "I want my money back for #W1."},
        {"index": 1, "kind": "action", "tool": "get_order", "args": {"id": "#W1"}, "content": "get_order"},
        {"index": 2, "kind": "observation", "tool": "get_order", "content": '{"id": "#W1", "paid_with": "visa"}'},
        {"index": 3, "kind": "action", "tool": "respond", "args": {"content": "Refunded to your visa."},
         "content": "Refunded to your visa."},
        {"index": 4, "kind": "observation", "role": "system", "content": "Handoff available."},
        {"index": 5, "kind": "intervention", "content": "You asked that already.",
         "meta": {"detector": "repetition", "tier": "hint", "evidence": {"policy": "their-watchdog"}}},
    ],
    "meta": {"model": "gpt-4.1"},
}


def test_roles_context_and_outcome_are_imported(user):
    from runs.imports.services import import_lines

    result = import_lines([json.dumps(DIALOGUE)], project_id=project_of(user).pk, owner=user)
    run = Run.objects.get(pk=result.run_ids[0])
    roles = dict(Step.objects.filter(run=run).values_list("index", "role"))
    assert roles == {0: "user", 1: "assistant", 2: "tool", 3: "assistant", 4: "system", 5: "watchdog"}
    assert run.context == DIALOGUE["context"]
    assert (run.status, run.success) == ("finished", True)  # reward 1.0 = full marks
    assert (run.temperature, run.max_steps, run.max_tokens, run.started_at) == (None, None, None, None)
    assert run.duration_s is None and run.finished_at is not None


@pytest.mark.parametrize(("fields", "status", "success"), [
    ({"success": True}, "finished", True),
    ({"success": False, "reward": 1.0}, "finished", False),  # success wins over reward
    ({"success": None, "reward": 0.0}, "finished", False),
    ({"success": None, "reward": 0.5}, "finished", False),  # partial credit is not a success
    ({"success": None, "reward": None}, "finished", None),
    ({"success": None, "meta": {"status": "error"}}, "error", None),
    ({"success": False, "steps": [{"index": 0, "kind": "error", "content": "model endpoint 500"}]}, "error", False),
    # No final answer and no outcome: it never got to its end (issue 30, item 12).
    ({"success": None, "steps": GOOD["steps"][:2]}, "stopped", None),
    ({"success": None, "steps": GOOD["steps"][:2], "meta": {"status": "finished"}}, "finished", None),  # our export
    ({"success": False, "steps": GOOD["steps"][:2]}, "finished", False),  # scored: it ended
    ({"success": None, "reward": 0.0, "steps": GOOD["steps"][:2]}, "finished", False),
])
def test_an_imported_run_is_finished_or_error_with_its_outcome_apart(user, fields, status, success):
    from runs.imports.services import import_lines

    result = import_lines([json.dumps({**GOOD, **fields})], project_id=project_of(user).pk, owner=user)
    run = Run.objects.get(pk=result.run_ids[0])
    assert (run.status, run.success) == (status, success)
    if status == "stopped":
        assert run.stopped_by == "unfinished"
        assert run.reason.startswith("the file's run ends at an observation step, without a final answer")


def test_the_sample_files_unfinished_run_is_not_listed_finished(auth_client):
    sample = auth_client.get(reverse("runs:import_sample")).content.decode()
    body = upload(auth_client, sample).content.decode()
    capital = Run.objects.get(source_run_id="capital-3")
    assert (capital.status, capital.stopped_by) == ("stopped", "unfinished")
    assert Run.objects.filter(status="finished").count() == 2
    # The result comes right under the form, before the format section.
    assert body.index('class="import-result"') < body.index('class="import-format"')
    assert '>stopped</span> <span class="muted"' in body


def test_an_imported_interruption_enters_the_review_queue_like_a_native_one(user, make_run):
    from runs.imports.services import import_lines
    from runs.reviews.models import ReviewItem
    from runs.reviews.services import review_items_sync
    from tracing.core.steps import Step as StepRecord
    from tracing.store.recorder import record_step

    run = Run.objects.get(pk=import_lines([json.dumps(DIALOGUE)], project_id=project_of(user).pk, owner=user).run_ids[0])
    imported = ReviewItem.objects.get(run=run)
    assert (imported.step_index, imported.detector, imported.tier, imported.policy_name, imported.run_status) == (
        5, "repetition", "hint", "their-watchdog", "finished")
    native = make_run(steps=0)
    record_step(native.pk, StepRecord(index=0, kind="intervention", text="You asked that already.",
                                      meta=DIALOGUE["steps"][5]["meta"]))
    review_items_sync(native.pk)
    mine = ReviewItem.objects.get(run=native)
    fields = ("step_index", "detector", "tier", "policy_name", "threshold", "thresholds", "prior", "label")
    assert [getattr(imported, f) for f in fields[1:]] == [getattr(mine, f) for f in fields[1:]]


def test_the_same_file_twice_gives_the_same_runs(auth_client):
    text = "\n".join(json.dumps({**GOOD, "run_id": f"r{i}"}) for i in range(3))
    first = upload(auth_client, text)
    assert Run.objects.count() == 3 and "Imported 3 runs" in first.content.decode()
    again = upload(auth_client, text)
    body = again.content.decode()
    assert again.status_code == 200
    assert Run.objects.count() == 3 and Step.objects.count() == 12
    assert "Imported 0 runs, 3 already imported" in body and body.count(">already imported</span>") == 3
    # Another label is another source: imported again, on purpose.
    auth_client.post(reverse("runs:import"), {"file": SimpleUploadedFile("r.jsonl", text.encode()), "source": "v2"})
    assert Run.objects.filter(source="v2").count() == 3


def test_another_users_import_of_the_same_file_is_their_own(user, other_user):
    from runs.imports.services import import_lines

    line = json.dumps(GOOD)
    assert len(import_lines([line], project_id=project_of(user).pk, owner=user).run_ids) == 1
    assert len(import_lines([line], project_id=project_of(other_user).pk, owner=other_user).run_ids) == 1
    again = import_lines([line], project_id=project_of(user).pk, owner=user)
    assert again.run_ids == [] and len(again.existing) == 1


def test_the_command_is_idempotent_and_says_so(tmp_path, capsys, project):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    call_command("importjsonl", str(path))
    call_command("importjsonl", str(path))
    assert Run.objects.count() == 1
    assert "imported 0 runs, 1 already imported, rejected 0 lines" in capsys.readouterr().out


def test_what_the_file_did_not_say_is_shown_as_a_dash(auth_client):
    upload(auth_client, json.dumps(GOOD))
    run = Run.objects.get()
    header = auth_client.get(run.get_absolute_url()).content.decode().split('id="timeline"')[0]
    assert "T=—" in header and "<dt>budget</dt><dd><span" in header and "20000" not in header
    assert "<dt>duration</dt><dd>—</dd>" in header and "0.0 s" not in header


@pytest.mark.parametrize(("line", "message"), [
    ({**GOOD, "steps": [{"index": 0, "kind": "observation", "role": "customer"}]}, "steps[0].role must be one of"),
    ({**GOOD, "context": "be nice"}, "'context' must be an object"),
    ({**GOOD, "context": {"system": "x" * (5 * 1024 * 1024)}}, "'context' is 5,242,"),
    ({**GOOD, "run_id": "r" * 201}, "'run_id' is longer than 200 characters"),
    ('{"run_id": "x", "steps": [], "reward": NaN}', "NaN is not a JSON number"),
    ('{"run_id": "x", "steps": [], "task": "\\ud800"}', "line.task contains a lone UTF-16 surrogate"),
])
def test_bad_lines_name_the_problem_and_write_nothing(user, line, message):
    from runs.imports.services import import_lines

    result = import_lines([line if isinstance(line, str) else json.dumps(line)], project_id=project_of(user).pk, owner=user)
    assert result.run_ids == [] and len(result.errors) == 1
    assert message in result.errors[0][1]
    assert Run.objects.count() == 0 and Step.objects.count() == 0


def test_odd_but_valid_content_imports_whole(user):
    """Bad tool output is data, not a reason to crash or half-write."""
    from runs.imports.services import import_lines

    big = json.dumps({"rows": [{"id": i, "name": f"item {i}", "note": "x" * 80} for i in range(82_000)]})
    assert len(big) > 10 * 1024 * 1024
    steps = [
        {"index": 0, "kind": "action", "tool": "sql", "args": "SELECT * FROM t", "content": "SELECT * FROM t"},
        {"index": 1, "kind": "observation", "tool": "sql", "content": '{"rows": [1, 2,'},  # not valid JSON
        {"index": 2, "kind": "observation", "tool": "sql", "content": big},  # a 10 MB JSON result
        {"index": 3, "kind": "observation", "tool": "bash", "content": "\x00\x01\x02\xff\ufffd\x7fELF\x00\x00"},
        {"index": 4, "kind": "thought", "content": "用户想要退款 for order #W1，我先查一下 the order。"},
        {"index": 5, "kind": "observation", "tool": "user", "content": ""},  # an empty turn
        {"index": 6, "kind": "thought", "content": ""},
        {"index": 7, "kind": "action", "tool": "t\x00ool", "args": {"k\x00": "v\x00"}, "content": "x"},
        {"index": 8, "kind": "final", "content": "完成 done"},
    ]
    result = import_lines([json.dumps({**GOOD, "steps": steps}, ensure_ascii=False)], project_id=project_of(user).pk, owner=user)
    assert result.errors == [] and len(result.run_ids) == 1
    stored = {s.index: s for s in Step.objects.filter(run_id=result.run_ids[0])}
    assert len(stored) == 9
    assert len(stored[2].text) == len(big)
    assert stored[3].text.startswith("\ufffd\x01\x02")  # NUL, which Postgres cannot hold, replaced
    assert stored[7].args == {"k\ufffd": "v\ufffd"} and stored[5].role == "user"
