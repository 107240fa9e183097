"""Generated junk thrown at the JSONL import and the step API (Hypothesis).

Whatever arrives: no crash, a per-line error or a 4xx naming the problem, and
nothing half-written (every stored run holds exactly the steps its summary
counts; a refused request or line leaves nothing behind).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.db.models import Count
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from runs.core.models import Run
from runs.imports.services import import_lines
from tests.projects import project_of, team
from tracing.core.steps import KINDS, ROLES
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

pytestmark = pytest.mark.django_db

PROPERTY_SETTINGS = settings(max_examples=120, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Text as agents' tools produce it: any code point, a NUL, a lone surrogate,
# control characters, Chinese and English, JSON-looking fragments.
odd_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=20),
    st.sampled_from(["", " ", "\x00", "\ud800", "\udc00", "\udfff", "a\udc80b", "用户想要退款 refund #W1", '{"rows": [1,', "[]", "null",
                     "Traceback (most recent call last):", "\x7fELF\x00\x01", "NaN", "0 rows"]),
)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                         st.floats(allow_nan=False, allow_infinity=False), odd_text)
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)), max_leaves=12)


def _maybe(strategy):
    return st.one_of(strategy, json_values)


step_dicts = st.fixed_dictionaries({}, optional={
    "index": _maybe(st.integers(min_value=-2, max_value=2**33)),
    "kind": _maybe(st.sampled_from(KINDS)),
    "role": _maybe(st.sampled_from([*ROLES, "customer", ""])),
    "content": _maybe(odd_text),
    "text": _maybe(odd_text),
    "tool": _maybe(st.sampled_from(["user", "respond", "sql", "bash", "t" * 130])),
    "args": json_values,
    "meta": _maybe(st.dictionaries(odd_text, json_values, max_size=3)),
    "prompt_tokens": _maybe(st.integers(min_value=-1, max_value=2**32)),
    "latency_ms": _maybe(st.floats(allow_nan=False, allow_infinity=False)),
})

# Well-formed steps with junk content: what reaches the writers and the detectors.
plausible_steps = st.lists(st.fixed_dictionaries({
    "kind": st.sampled_from(KINDS), "content": odd_text,
}, optional={
    "role": st.sampled_from(ROLES), "tool": st.sampled_from(["user", "respond", "sql", "bash", "search"]),
    "args": json_values, "meta": st.dictionaries(st.sampled_from(["status", "detector", "tier", "x\x00"]), json_values,
                                                 max_size=3),
}), max_size=8).map(lambda steps: [{**step, "index": i} for i, step in enumerate(steps)])

plausible_trajectories = st.fixed_dictionaries({
    "run_id": st.text(min_size=1, max_size=8), "task": odd_text, "steps": plausible_steps,
}, optional={
    "source": st.text(max_size=10), "success": st.none() | st.booleans(),
    "reward": st.none() | st.floats(min_value=-1, max_value=2),
    "context": st.fixed_dictionaries({}, optional={"system": odd_text, "tools": st.lists(json_values, max_size=2)}),
    "meta": st.dictionaries(st.sampled_from(["model", "status", "temperature"]), json_values, max_size=2),
})

trajectory_dicts = st.fixed_dictionaries({}, optional={
    "run_id": _maybe(st.one_of(st.text(max_size=8), st.integers())),
    "source": _maybe(st.text(max_size=50)),
    "task": _maybe(odd_text),
    "steps": _maybe(st.lists(step_dicts, max_size=6)),
    "success": _maybe(st.booleans()),
    "reward": _maybe(st.floats(allow_nan=False, allow_infinity=False)),
    "meta": _maybe(st.dictionaries(odd_text, json_values, max_size=3)),
    "context": _maybe(st.fixed_dictionaries({}, optional={"system": _maybe(odd_text),
                                                           "tools": _maybe(st.lists(json_values, max_size=3))})),
})


context_dicts = st.fixed_dictionaries({}, optional={"system": _maybe(odd_text),
                                                   "tools": _maybe(st.lists(json_values, max_size=3))})

run_dicts = st.fixed_dictionaries({}, optional={
    "prompt": _maybe(odd_text),
    "model": _maybe(st.text(max_size=130)),
    "external_id": _maybe(st.text(max_size=5)),
    "metadata": json_values,
    "context": _maybe(context_dicts),
    "steps": st.one_of(plausible_steps, st.lists(step_dicts, max_size=5), json_values),
    "finish": _maybe(st.fixed_dictionaries({}, optional={
        "status": _maybe(st.sampled_from(["finished", "stopped", "error", "succeeded", "failed", "done"])),
        "success": _maybe(st.booleans()), "final_answer": _maybe(odd_text)})),
    "analyse": _maybe(st.booleans()),
})


def _dump(value, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


lines = st.one_of(
    st.binary(max_size=60),
    odd_text,
    st.builds(_dump, json_values, st.booleans()),
    st.builds(_dump, trajectory_dicts, st.booleans()),
    st.builds(lambda d: _dump(d, True)[:-3], trajectory_dicts),  # cut short
    st.sampled_from(['{"run_id": "x", "steps": [], "reward": NaN}', '{"run_id": 1, "steps": [], "t": 1e999}',
                     "[" * 5000 + "]" * 5000, "[" * 200_000]),
    # A number past Python's 4,300-digit limit, or a field's range, anywhere in a plausible line.
    st.builds(lambda d, field, digits: _dump({**d, field: "@BIG@"}, True).replace('"@BIG@"', "9" * digits),
              plausible_trajectories, st.sampled_from(["reward", "run_id", "success"]),
              st.sampled_from([10, 400, 4301, 5000])),
    st.builds(lambda d, index: _dump({**d, "steps": [{"index": index, "kind": "thought", "content": "x"}]}, True),
              plausible_trajectories, st.sampled_from([2**31 - 1, 2**31, 2**63, -1])),
)


def _assert_whole() -> None:
    """Every stored run holds exactly the steps its summary counts."""
    counted = dict(Step.objects.values_list("run_id").annotate(n=Count("id")))
    for run_id, step_count in Run.objects.values_list("id", "step_count"):
        assert counted.get(run_id, 0) == step_count, run_id


@PROPERTY_SETTINGS
@given(batch=st.lists(st.one_of(lines, st.builds(_dump, plausible_trajectories, st.booleans())), min_size=1,
                      max_size=5))
def test_the_jsonl_import_reports_or_imports_every_line_whole(user, batch):
    with transaction.atomic():
        encoded = [line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line for line in batch]
        result = import_lines(encoded, project_id=project_of(user).pk, owner=user)
        event(f"runs imported: {min(len(result.run_ids), 2)}+")
        reported = {lineno for lineno, _ in result.errors}
        assert all(isinstance(message, str) and message for _, message in result.errors)
        assert not reported & {lineno for lineno, _ in result.existing}
        assert Run.objects.count() == len(result.run_ids)
        _assert_whole()
        transaction.set_rollback(True)


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="props")[1]


bodies = st.one_of(
    st.binary(max_size=60),
    st.builds(_dump, json_values, st.booleans()),
    st.builds(lambda steps, ascii_only: _dump({"steps": steps}, ascii_only), st.lists(step_dicts, max_size=5),
              st.booleans()),
    st.builds(lambda steps, ascii_only: _dump({"steps": steps}, ascii_only), plausible_steps, st.booleans()),
    st.builds(lambda steps, ascii_only: _dump({"steps": steps}, ascii_only), plausible_steps, st.booleans()),
    st.builds(lambda steps, extra: _dump({"steps": steps, **extra}, True), st.lists(step_dicts, max_size=3),
              st.dictionaries(st.text(max_size=5), json_values, max_size=2)),
    st.sampled_from(["[" * 200_000, '{"steps": [{"index": 0, "kind": "thought", "prompt_tokens": ' + "9" * 5000 + "}]}",
                     '{"steps": [{"index": 2147483648, "kind": "thought"}]}']),
)


def _post_to_a_live_run(client, user, token, action: str, body: str | bytes):
    run = Run.objects.create(project=team(), owner=user, prompt="p", provider="import", source="api", status="running")
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    response = client.generic("POST", f"/api/runs/{run.pk}/{action}", raw, content_type="application/json",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    return run, response


@PROPERTY_SETTINGS
@given(body=bodies)
def test_the_step_api_answers_junk_with_a_4xx_and_writes_nothing(client, user, token, body):
    with transaction.atomic():
        run, response = _post_to_a_live_run(client, user, token, "steps", body)
        assert response.status_code in (200, 400, 413), (response.status_code, response.content[:300])
        event(f"status {response.status_code}")
        if response.status_code != 200:
            assert response.json()["error"]
            assert Step.objects.filter(run=run).count() == 0
        run.refresh_from_db()
        assert Step.objects.filter(run=run).count() == run.step_count
        transaction.set_rollback(True)


@PROPERTY_SETTINGS
@given(run=st.one_of(run_dicts, json_values), ascii_only=st.booleans())
def test_run_creation_answers_junk_with_a_4xx_and_creates_nothing(client, token, run, ascii_only):
    with transaction.atomic():
        body = _dump(run, ascii_only).encode("utf-8", "surrogatepass")
        response = client.generic("POST", "/api/runs", body, content_type="application/json",
                                  HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code in (201, 400, 413), (response.status_code, response.content[:300])
        event(f"status {response.status_code}")
        if response.status_code != 201:
            assert response.json()["error"] and Run.objects.count() == 0
        _assert_whole()
        transaction.set_rollback(True)


finish_bodies = st.one_of(
    st.binary(max_size=40),
    st.builds(_dump, json_values, st.booleans()),
    st.builds(_dump, st.fixed_dictionaries({}, optional={
        "status": _maybe(st.sampled_from(["finished", "stopped", "error", "succeeded", "failed", "done"])),
        "success": _maybe(st.booleans()), "final_answer": _maybe(odd_text), "reason": _maybe(odd_text)}),
        st.booleans()),
    st.sampled_from(['{"final_answer": ' + "9" * 5000 + "}", "[" * 200_000, '{"final_answer": "\\udc00"}']),
)


@PROPERTY_SETTINGS
@given(body=finish_bodies)
def test_finishing_a_run_answers_junk_with_a_4xx_and_changes_nothing(client, user, token, body):
    with transaction.atomic():
        run, response = _post_to_a_live_run(client, user, token, "finish", body)
        assert response.status_code in (200, 400), (response.status_code, response.content[:300])
        event(f"status {response.status_code}")
        run.refresh_from_db()
        if response.status_code == 400:
            assert response.json()["error"]
            assert run.status == "running" and run.final_answer == "" and run.finished_at is None
        else:
            assert run.status in ("finished", "error", "stopped")
        transaction.set_rollback(True)


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(batch=st.lists(st.one_of(lines, st.builds(_dump, plausible_trajectories, st.booleans())), min_size=1,
                      max_size=4))
def test_the_import_command_reports_bad_lines_by_number_without_a_traceback(user, batch):
    encoded = [line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line for line in batch]
    with transaction.atomic(), tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junk.jsonl"
        # One trajectory a line: a newline inside generated junk would start another.
        path.write_bytes(b"\n".join(line.replace(b"\n", b" ").replace(b"\r", b" ") for line in encoded) + b"\n")
        out, err = io.StringIO(), io.StringIO()
        try:
            call_command("importjsonl", str(path), stdout=out, stderr=err)
        except CommandError as exc:
            assert "line(s) rejected" in str(exc)
        reports = err.getvalue().splitlines()
        assert all(line.startswith(f"{path}:") and line.split(":", 2)[1].isdigit() for line in reports), reports
        # A Python traceback starts a line with its header; generated junk may
        # use that very header as a field name, which a report quotes inside
        # its own line ("….args[0].Traceback (most recent call last) contains …").
        printed = (out.getvalue() + err.getvalue()).splitlines()
        assert not any(line.startswith("Traceback (most recent call last)") for line in printed), printed
        assert f"imported {Run.objects.count()} runs" in out.getvalue()
        _assert_whole()
        transaction.set_rollback(True)
