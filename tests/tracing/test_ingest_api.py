from __future__ import annotations

import gzip
import json

import pytest

from runs.core.models import Run
from tests.projects import project_of
from tracing.core.formats.jsonapi import MAX_JSON_DEPTH
from tracing.store.guard import NOT_GUARDED
from tracing.store.ingest.writes import COPY_MIN_ROWS, token_create, token_revoke
from tracing.store.models import ExternalRun, Step

pytestmark = pytest.mark.django_db
# What the step API answers about the watchdog for a run created without `guard` (tests/tracing/test_guard.py).
UNGUARDED = {"guard": "off", "decision": "none", "decision_reason": NOT_GUARDED}


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="test")[1]


@pytest.fixture
def api(client, token):
    """POST / GET with the bearer token; JSON bodies unless raw bytes are given."""

    class Api:
        def post(self, path, body=None, *, raw=None, headers=None, token_=token, content_type="application/json"):
            data = raw if raw is not None else json.dumps(body)
            extra = {"HTTP_AUTHORIZATION": f"Bearer {token_}"} if token_ else {}
            for key, value in (headers or {}).items():
                extra["HTTP_" + key.upper().replace("-", "_")] = value
            return client.generic("POST", path, data, content_type=content_type, **extra)

        def get(self, path, token_=token):
            return client.get(path, HTTP_AUTHORIZATION=f"Bearer {token_}")

    return Api()


def _steps(start, count, **extra):
    kinds = ("thought", "action", "observation")
    return [
        {"index": i, "kind": kinds[i % 3], "text": f"step {i}", "tool": "search" if i % 3 else None,
         "args": {"query": f"q{i}"} if i % 3 == 1 else None, "prompt_tokens": 10, "completion_tokens": 2,
         "latency_ms": 1.5, **extra}
        for i in range(start, start + count)
    ]


def _create(api, **fields):
    response = api.post("/api/runs", {"prompt": "What is the capital of Freedonia?", "model": "m1", **fields})
    assert response.status_code == 201, response.content
    return response.json()["runs"][0]


def test_it_creates_appends_and_finishes_a_run(api, user):
    created = _create(api, agent="my-loop", external_id="ext-1", conversation_id="conv-9")
    run = Run.objects.get(pk=created["id"])
    assert (run.owner, run.provider, run.source, run.status, run.model_name) == (user, "import", "api", "running", "m1")
    assert run.settings == {"agent": "my-loop", "external_id": "ext-1", "conversation_id": "conv-9"}

    response = api.post(f"/api/runs/{run.pk}/steps", {"steps": _steps(0, 3)})
    assert response.json() == {"run": run.pk, "written": 3, "duplicates": 0, **UNGUARDED}
    response = api.post(f"/api/runs/{run.pk}/finish", {"status": "succeeded", "final_answer": "Fredville"})
    assert response.status_code == 200
    body = response.json()
    # "succeeded" is API version 1's word for finished with success true.
    assert (body["status"], body["success"], body["step_count"], body["prompt_tokens"], body["completion_tokens"]) == (
        "finished", True, 3, 30, 6)
    run.refresh_from_db()
    assert run.final_answer == "Fredville" and run.finished_at is not None
    assert run.latency_ms == pytest.approx(4.5)
    step = Step.objects.get(run=run, index=1)
    assert (step.kind, step.tool, step.args) == ("action", "search", {"query": "q1"})


def test_a_resent_batch_is_a_no_op(api):
    run_id = _create(api)["id"]
    api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 2)})
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 3)})
    assert response.json() == {"run": run_id, "written": 1, "duplicates": 2, **UNGUARDED}
    run = Run.objects.get(pk=run_id)
    assert run.step_count == 3 and run.prompt_tokens == 30


def test_the_copy_path_skips_stored_indices_and_keeps_the_summary(api):
    run_id = _create(api)["id"]
    api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 5)})
    big = _steps(0, COPY_MIN_ROWS + 10)
    big.append({"index": COPY_MIN_ROWS + 10, "kind": "intervention", "text": "loop",
                "meta": {"detector": "repetition", "tier": "hint"}})
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": big})
    assert response.json() == {"run": run_id, "written": COPY_MIN_ROWS + 6, "duplicates": 5, **UNGUARDED}
    run = Run.objects.get(pk=run_id)
    assert run.step_count == Step.objects.filter(run_id=run_id).count() == COPY_MIN_ROWS + 11
    assert run.prompt_tokens == 10 * (COPY_MIN_ROWS + 10)
    assert run.intervention_count == 1
    assert run.intervention_detectors == ["repetition"] and run.intervention_tiers == ["hint"]


def test_creating_with_the_same_external_id_returns_the_same_run(api):
    first = _create(api, external_id="same", steps=_steps(0, 2))
    again = _create(api, external_id="same", steps=_steps(0, 3))
    assert again["id"] == first["id"] and again["created"] is False
    assert (again["steps_written"], again["steps_duplicate"]) == (1, 2)
    assert ExternalRun.objects.filter(external_id="same").count() == 1


def test_bulk_create_writes_many_runs_with_summaries_in_one_request(api):
    runs = [
        {"prompt": f"task {i}", "external_id": f"bulk-{i}", "steps": _steps(0, 20),
         "finish": {"status": "failed" if i % 2 else "succeeded", "final_answer": "x"}, "analyse": False}
        for i in range(4)
    ]
    runs[0]["steps"].append({"index": 20, "kind": "intervention", "text": "stop",
                             "meta": {"detector": "budget", "tier": "stop"}})
    response = api.post("/api/runs", {"runs": runs})
    assert response.status_code == 201
    ids = [r["id"] for r in response.json()["runs"]]
    stored = {r.pk: r for r in Run.objects.filter(pk__in=ids)}
    assert [(stored[i].status, stored[i].success) for i in ids] == [("finished", True), ("finished", False)] * 2
    assert [stored[i].step_count for i in ids] == [21, 20, 20, 20]
    assert stored[ids[0]].intervention_detectors == ["budget"]
    assert Step.objects.filter(run_id__in=ids).count() == 81


def test_finishing_analyses_the_run(api):
    run_id = _create(api)["id"]
    steps = [
        {"index": 0, "kind": "action", "tool": "search", "args": {"query": "capital of Freedonia"}, "text": "search"},
        {"index": 1, "kind": "observation", "tool": "search", "text": "Fredville is the capital of Freedonia."},
        {"index": 2, "kind": "final", "text": "Fredville"},
    ]
    api.post(f"/api/runs/{run_id}/steps", {"steps": steps})
    api.post(f"/api/runs/{run_id}/finish", {"status": "succeeded", "final_answer": "Fredville"})
    metas = list(Step.objects.filter(run_id=run_id).values_list("meta", flat=True))
    # run_analyse wrote its per-step results (anchoring scores or signals) into the steps.
    assert any(meta for meta in metas)


def test_the_openapi_description_is_served(client):
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert {"/api/runs", "/api/runs/{run_id}/steps", "/api/runs/{run_id}/finish", "/v1/traces"} <= set(spec["paths"])


# --- auth and ownership --------------------------------------------------------------


def test_a_missing_token_is_401(api):
    response = api.post("/api/runs", {"prompt": "x"}, token_=None)
    assert response.status_code == 401
    assert "missing bearer token" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_token_is_401(api, user):
    token, plain = token_create(user=user, project_id=project_of(user).pk, name="old")
    assert api.post("/api/runs", {"prompt": "x"}, token_=plain).status_code == 201
    token_revoke(token=token)
    response = api.post("/api/runs", {"prompt": "x"}, token_=plain)
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]


def test_a_wrong_token_is_401(api):
    assert api.post("/api/runs", {"prompt": "x"}, token_="al_nope").status_code == 401


def test_another_users_run_is_404(api, other_user):
    run_id = _create(api)["id"]
    other = token_create(user=other_user, project_id=project_of(other_user).pk, name="bob")[1]
    for response in (
        api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 1)}, token_=other),
        api.post(f"/api/runs/{run_id}/finish", {"status": "failed"}, token_=other),
        api.get(f"/api/runs/{run_id}", token_=other),
    ):
        assert response.status_code == 404
        assert f"run {run_id} not found" in response.json()["error"]
    assert Step.objects.filter(run_id=run_id).count() == 0


def test_an_unknown_run_is_404(api):
    response = api.post("/api/runs/999999/steps", {"steps": _steps(0, 1)})
    assert response.status_code == 404


def test_a_run_not_created_through_the_api_is_409(api, make_run):
    run = make_run(status="running")
    response = api.post(f"/api/runs/{run.pk}/steps", {"steps": _steps(10, 1)})
    assert response.status_code == 409
    assert "not created through the API" in response.json()["error"]


def test_steps_for_a_finished_run_are_409_but_a_resend_is_fine(api):
    run_id = _create(api)["id"]
    api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 2)})
    api.post(f"/api/runs/{run_id}/finish", {"status": "failed"})
    assert api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(0, 2)}).json()["duplicates"] == 2
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": _steps(2, 1)})
    assert response.status_code == 409
    assert "is finished" in response.json()["error"]
    assert api.post(f"/api/runs/{run_id}/finish", {"status": "failed"}).status_code == 200
    assert api.post(f"/api/runs/{run_id}/finish", {"status": "succeeded"}).status_code == 409


# --- bad input: a clear 4xx naming the problem, nothing written ------------------------


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ("nope", "steps must be an array"),
        ([{"index": "1", "kind": "thought"}], "steps[0].index must be an integer, not str"),
        ([{"index": True, "kind": "thought"}], "steps[0].index must be an integer"),
        ([{"index": -1, "kind": "thought"}], "steps[0].index must be between 0"),
        ([{"kind": "thought"}], "steps[0].index is missing"),
        ([{"index": 0, "kind": "musing"}], "steps[0].kind must be one of"),
        ([{"index": 0, "kind": "thought", "text": 5}], "steps[0].text must be a string"),
        ([{"index": 0, "kind": "thought", "txt": "typo"}], "unknown field(s): txt"),
        ([{"index": 0, "kind": "thought", "meta": []}], "steps[0].meta must be an object"),
        ([{"index": 0, "kind": "thought", "latency_ms": -1}], "latency_ms must be a finite number"),
        ([{"index": 0, "kind": "thought", "prompt_tokens": 2**40}], "prompt_tokens must be between"),
        ([{"index": 0, "kind": "action", "tool": "t" * 121}], "steps[0].tool is longer than 120"),
        ([*_steps(0, 3), {"index": 1, "kind": "thought"}], "steps[3].index 1 is lower than steps[2].index 2"),
        ([{"index": 3, "kind": "thought"}, {"index": 3, "kind": "final"}], "steps[1].index 3 repeats"),
    ],
)
def test_bad_steps_are_400_and_write_nothing(api, steps, message):
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": steps})
    assert response.status_code == 400, response.content
    assert message in response.json()["error"]
    assert Step.objects.filter(run_id=run_id).count() == 0
    assert Run.objects.get(pk=run_id).step_count == 0


@pytest.mark.parametrize("valid", [3, COPY_MIN_ROWS + 5])
def test_a_batch_with_one_bad_step_at_the_end_writes_nothing(api, valid):
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": [*_steps(0, valid), {"index": valid, "kind": "?"}]})
    assert response.status_code == 400
    assert f"steps[{valid}].kind must be one of" in response.json()["error"]
    assert Step.objects.filter(run_id=run_id).count() == 0


def test_malformed_json_is_400(api):
    response = api.post("/api/runs", raw=b'{"prompt": "x",')
    assert response.status_code == 400
    assert "not JSON" in response.json()["error"]


def test_invalid_utf8_is_400_naming_the_byte(api):
    response = api.post("/api/runs", raw=b'{"prompt": "caf\xe9"}')
    assert response.status_code == 400
    assert "not valid UTF-8 (byte 0xe9" in response.json()["error"]


def test_a_lone_surrogate_escape_is_400(api):
    response = api.post("/api/runs", raw=b'{"prompt": "x\\ud800y"}')
    assert response.status_code == 400
    assert "body.prompt contains a lone UTF-16 surrogate" in response.json()["error"]


def test_a_valid_surrogate_pair_is_fine(api):
    created = _create(api, agent="\U0001f600 bot")
    assert Run.objects.get(pk=created["id"]).settings["agent"] == "\U0001f600 bot"


def test_deeply_nested_args_are_400(api):
    run_id = _create(api)["id"]
    args: dict = {}
    node = args
    for _ in range(MAX_JSON_DEPTH + 1):
        node["a"] = {}
        node = node["a"]
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": [{"index": 0, "kind": "action", "args": args}]})
    assert response.status_code == 400
    assert f"steps[0].args is nested more than {MAX_JSON_DEPTH} levels" in response.json()["error"]


def test_args_at_the_depth_limit_are_fine(api):
    run_id = _create(api)["id"]
    args: dict = {}
    node = args
    for _ in range(MAX_JSON_DEPTH - 1):
        node["a"] = {}
        node = node["a"]
    response = api.post(f"/api/runs/{run_id}/steps", {"steps": [{"index": 0, "kind": "action", "args": args}]})
    assert response.status_code == 200


def test_json_nested_past_the_parser_limit_is_400(api):
    response = api.post("/api/runs", raw=b"[" * 200_000 + b"]" * 200_000)
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]


def test_a_body_over_the_cap_is_413(api, settings):
    settings.INGEST_MAX_BODY_BYTES = 20 * 1024 * 1024
    body = b'{"prompt": "' + b"x" * (21 * 1024 * 1024) + b'"}'
    response = api.post("/api/runs", raw=body)
    assert response.status_code == 413
    assert "the limit is 20971520 bytes" in response.json()["error"]
    assert Run.objects.count() == 0


def test_gzip_bodies_are_accepted(api):
    body = gzip.compress(json.dumps({"prompt": "zipped", "steps": _steps(0, 40)}).encode())
    response = api.post("/api/runs", raw=body, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 201
    assert Run.objects.get(pk=response.json()["runs"][0]["id"]).step_count == 40


def test_a_gzip_bomb_is_413(api, settings):
    settings.INGEST_MAX_BODY_BYTES = 1024 * 1024
    body = gzip.compress(b'{"prompt": "' + b"x" * (5 * 1024 * 1024) + b'"}')
    assert len(body) < settings.INGEST_MAX_BODY_BYTES
    response = api.post("/api/runs", raw=body, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert "once decompressed" in response.json()["error"]


def test_broken_gzip_is_400(api):
    response = api.post("/api/runs", raw=b"\x1f\x8b not really", headers={"Content-Encoding": "gzip"})
    assert response.status_code == 400
    assert "not valid gzip" in response.json()["error"]


def test_a_bulk_request_with_one_bad_run_writes_nothing(api):
    runs = [{"prompt": "ok", "steps": _steps(0, 40)}, {"prompt": "bad", "steps": [{"index": 0, "kind": "nope"}]}]
    response = api.post("/api/runs", {"runs": runs})
    assert response.status_code == 400
    assert "runs[1].steps[0].kind" in response.json()["error"]
    assert Run.objects.count() == 0 and Step.objects.count() == 0


def test_wrong_types_at_the_top_are_400(api):
    assert "body must be an object" in api.post("/api/runs", [1, 2]).json()["error"]
    assert "body.prompt must be a string" in api.post("/api/runs", {"prompt": 3}).json()["error"]
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/steps", {"step": []})
    assert response.status_code == 400 and '{"steps": [...]}' in response.json()["error"]
    response = api.post(f"/api/runs/{run_id}/finish", {"status": "done"})
    assert response.status_code == 400 and "body.status must be one of" in response.json()["error"]


# --- roles, context, outcome (issue 11) -------------------------------------------------


def test_roles_are_stored_given_or_inferred(api):
    run_id = _create(api)["id"]
    steps = [
        {"index": 0, "kind": "observation", "tool": "user", "text": "I want a refund."},  # inferred: user
        {"index": 1, "kind": "action", "tool": "respond", "text": "Which order?", "args": {"content": "Which order?"}},
        {"index": 2, "kind": "observation", "tool": "get_order", "text": "{}"},  # inferred: tool
        {"index": 3, "kind": "observation", "role": "system", "text": "Policy: refunds within 30 days."},
        {"index": 4, "kind": "intervention", "text": "hint", "meta": {"detector": "repetition", "tier": "hint"}},
        {"index": 5, "kind": "thought", "role": "user", "text": "a user's aside sent as a thought"},
    ]
    assert api.post(f"/api/runs/{run_id}/steps", {"steps": steps}).status_code == 200
    stored = dict(Step.objects.filter(run_id=run_id).values_list("index", "role"))
    assert stored == {0: "user", 1: "assistant", 2: "tool", 3: "system", 4: "watchdog", 5: "user"}
    assert Step.objects.get(run_id=run_id, index=1).to_record().role == "assistant"


@pytest.mark.parametrize("role", ["customer", "", 3, ["user"], "USER"])
def test_an_unknown_role_is_400_naming_the_field(api, role):
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/steps",
                        {"steps": [*_steps(0, 2), {"index": 2, "kind": "observation", "role": role}]})
    assert response.status_code == 400
    assert "steps[2].role must be one of assistant, tool, user, system, watchdog" in response.json()["error"]
    assert Step.objects.filter(run_id=run_id).count() == 0


def test_a_run_is_created_with_its_context(api):
    context = {"system": "You are a <b>retail</b> agent. 退货须在30天内。", "tools": [{"name": "get_order"}]}
    run = Run.objects.get(pk=_create(api, context=context)["id"])
    assert run.context == context
    assert (run.temperature, run.max_steps, run.max_tokens) == (None, None, None)  # not said: unknown


@pytest.mark.parametrize(("context", "message"), [
    ("be nice", "body.context: 'context' must be an object"),
    ([{"system": "x"}], "body.context: 'context' must be an object"),
    ({"system": 5}, "context.system must be a string"),
    ({"tools": {"name": "x"}}, "context.tools must be a list"),
    ({"policy": "x"}, "context.policy: unknown field"),
])
def test_a_bad_context_is_400_and_creates_nothing(api, context, message):
    response = api.post("/api/runs", {"prompt": "p", "context": context})
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Run.objects.count() == 0


def test_a_5_mb_system_prompt_is_refused_with_the_limit(api):
    from tracing.core.formats.jsonapi import MAX_CONTEXT_BYTES

    response = api.post("/api/runs", {"prompt": "p", "context": {"system": "policy " * (5 * 1024 * 1024 // 7)}})
    assert response.status_code == 413
    error = response.json()["error"]
    assert "body.context is" in error and f"the limit is {MAX_CONTEXT_BYTES:,} bytes" in error
    assert Run.objects.count() == 0


@pytest.mark.parametrize(("finish", "expected"), [
    ({"status": "finished", "success": True}, ("finished", True)),
    ({"status": "finished"}, ("finished", None)),
    ({}, ("finished", None)),
    ({"status": "succeeded"}, ("finished", True)),  # API version 1
    ({"status": "failed"}, ("finished", False)),
    ({"status": "failed", "success": False}, ("finished", False)),
    ({"status": "stopped"}, ("stopped", None)),
    ({"status": "error"}, ("error", None)),
])
def test_finish_sets_status_and_outcome_apart(api, finish, expected):
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/finish", finish)
    assert response.status_code == 200, response.content
    assert (response.json()["status"], response.json()["success"]) == expected
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.success) == expected


@pytest.mark.parametrize(("finish", "message"), [
    ({"status": "succeeded", "success": False}, "body.status 'succeeded' contradicts body.success false"),
    ({"status": "stopped", "success": False}, "success must be null for a stopped run"),
    ({"status": ["finished"]}, "body.status must be one of finished, error, stopped, succeeded, failed"),
    ({"status": "done"}, "body.status must be one of"),
])
def test_a_contradictory_finish_is_400(api, finish, message):
    run_id = _create(api)["id"]
    response = api.post(f"/api/runs/{run_id}/finish", finish)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert Run.objects.get(pk=run_id).status == "running"


def test_finishing_again_the_same_way_is_fine_another_way_409(api):
    run_id = _create(api)["id"]
    assert api.post(f"/api/runs/{run_id}/finish", {"status": "finished", "success": True}).status_code == 200
    assert api.post(f"/api/runs/{run_id}/finish", {"status": "succeeded"}).status_code == 200
    response = api.post(f"/api/runs/{run_id}/finish", {"status": "finished", "success": False})
    assert response.status_code == 409 and "already ended: finished, success" in response.json()["error"]


@pytest.mark.parametrize("raw", [b'{"prompt": NaN}', b'{"prompt": "x", "metadata": {"t": Infinity}}',
                                 b'{"prompt": "x", "metadata": {"t": 1e999}}',
                                 b'{"prompt": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}"])
def test_numbers_jsonb_cannot_hold_are_400(api, raw):
    response = api.post("/api/runs", raw=raw)
    assert response.status_code == 400
    assert "not acceptable JSON" in response.json()["error"]
    assert Run.objects.count() == 0


def test_an_ingested_interruption_enters_the_review_queue(api):
    from runs.reviews.models import ReviewItem

    run_id = _create(api, steps=[
        *_steps(0, 3),
        {"index": 3, "kind": "intervention", "text": "You searched this already.",
         "meta": {"detector": "repetition", "tier": "hint", "evidence": {"policy": "theirs", "similarity": 0.9}}},
    ])["id"]
    assert not ReviewItem.objects.filter(run_id=run_id).exists()  # items come when the run ends
    api.post(f"/api/runs/{run_id}/finish", {"status": "finished"})
    item = ReviewItem.objects.get(run_id=run_id)
    assert (item.step_index, item.detector, item.tier, item.policy_name, item.run_status) == (
        3, "repetition", "hint", "theirs", "finished")


def test_the_openapi_description_documents_roles_context_and_outcome(client):
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "user" in schemas["Step"]["properties"]["role"]["enum"]
    assert schemas["RunIn"]["properties"]["context"] == {"$ref": "#/components/schemas/Context"}
    assert set(schemas["Context"]["properties"]) == {"system", "tools"}
    finish = schemas["Finish"]["properties"]
    assert finish["status"]["default"] == "finished" and "succeeded" in finish["status"]["enum"]
    assert "success" in schemas["RunSummary"]["properties"]


@pytest.mark.parametrize("inline", [False, True])
def test_repeated_steps_in_a_bulk_request_each_get_their_own_search_document(api, settings, inline):
    """Each step gets its own document, whether the indexer builds it after
    the write (the default) or the write does (memoised within it: a repeat
    shares one only when text, tool and arguments are all the same)."""
    from django.db import connection

    from tracing.core.stepsearch import step_document
    from tracing.store.step_indexer import index_pending_steps

    settings.STEP_SEARCH_INLINE = inline

    variants = [("Nothing happens.", None, None), ("Nothing happens.", "look", None),
                ("Nothing happens.", "look", "north"), ("Nothing happens.", "look", {"dir": "north"}),
                ("Nothing happens.", "look", {"dir": "south"})]
    steps = [{"index": i, "kind": "observation", "text": text, "tool": tool, "args": args}
             for i, (text, tool, args) in enumerate(variants * (COPY_MIN_ROWS // len(variants) + 1))]
    assert len(steps) >= COPY_MIN_ROWS  # the COPY path
    response = api.post("/api/runs", {"runs": [{"prompt": "p", "steps": steps}, {"prompt": "q", "steps": steps}]})
    assert response.status_code == 201, response.content
    assert index_pending_steps() == (0 if inline else 2 * len(steps))
    with connection.cursor() as cur:
        cur.execute("SELECT index, search::text FROM tracing_step WHERE run_id = ANY(%s) ORDER BY run_id, index",
                    [[r["id"] for r in response.json()["runs"]]])
        stored = cur.fetchall()
    assert len(stored) == 2 * len(steps)
    with connection.cursor() as cur:
        for index, search in stored:
            cur.execute("SELECT %s::tsvector::text", [step_document(*variants[index % len(variants)])])
            assert search == cur.fetchone()[0], index
    assert len({search for _, search in stored}) == len(variants)
