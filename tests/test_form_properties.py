"""Generated junk thrown at every form of the app (Hypothesis).

Each form gets plausible values with junk mixed in (NUL, huge and deeply
nested JSON, numbers past every range, impossible dates, unknown choices).
Whatever arrives: never a 500, and a refused submission changes no table;
an accepted one leaves every run whole.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from runs.core.models import Policy, RerunGroup, Run
from runs.policies.services import COLUMNS
from runs.reviews.models import ReviewItem, ReviewLabel
from runs.whatif.forms import SWEEPABLE
from runs.whatif.models import WhatIfJob
from tests.projects import project_of
from tests.test_ingest_properties import _assert_whole, _dump, lines, plausible_trajectories
from tracing.core.watchdog import DEFAULT_POLICY
from tracing.store.models import ApiToken, Step

pytestmark = pytest.mark.django_db

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# The policy as its form's JSON field takes it: name, version and description have their own fields.
POLICY_JSON = json.dumps({k: v for k, v in DEFAULT_POLICY.to_dict().items() if k not in COLUMNS})

# What a browser can send: any text but lone surrogates (a form is UTF-8).
form_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30)
junk = st.one_of(
    form_text,
    st.sampled_from([
        "", " ", "0", "-1", "1", "1.5", "0.7", "1e999", "-1e999", "nan", "inf", "2147483648", "9" * 5000,
        "1" + "0" * 400, "[" * 20_000, "[" * 200_000, "[]", "{}", "null", "true", "\x00", "a\x00b",
        "2026-13-45", "2026-01-01", "0001-01-01", "9999-12-31", "10000-01-01", "1,2,3", "1e308, 1e309", ",,,",
        '{"thresholds": {"loop_repeats": ' + "9" * 5000 + "}}", '{"ladder": 5}', '{"windows": {"stagnation": 1e300}}',
        '{"version": 2147483648}', '{"name": "x\\u0000", "ladder": {"stop_streak": 4}}', '{"a": "\\udc00"}',
        POLICY_JSON, "on", "sim", "openai", "tools", "text", "default", "ladder.stop_streak", "correct",
        "wrongly_killed", "justified", str(2**31), str(2**63), str(-(2**63) - 1), "<script>alert(1)</script>", "x" * 5000,
    ]),
)


def _form(valid: dict[str, str], names: list[str]):
    """A valid submission with up to two of its fields (and a stray one) replaced by junk."""
    return st.builds(lambda replaced, stray: {**valid, **replaced, **stray},
                     st.dictionaries(st.sampled_from(names), junk, max_size=2),
                     st.dictionaries(st.sampled_from(["x", "csrfmiddlewaretoken", "runs", "use_json"]), junk,
                                     max_size=1))


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count()
            for model in (Run, Step, Policy, WhatIfJob, ApiToken, RerunGroup, ReviewItem, ReviewLabel)}


@pytest.fixture
def admin_client(user):
    # Superuser: every permission, so the junk reaches the forms' own checks.
    user.is_superuser = True
    user.is_staff = True
    user.save()
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture
def world(make_run, user):
    """A run with steps, a review item on it, a policy: what the forms point at."""
    run = make_run(steps=6)
    item = ReviewItem.objects.create(run=run, step_index=3, detector="repetition", tier="stop")
    policy = Policy.objects.create(name="default", version=1, config=DEFAULT_POLICY.to_dict(), created_by=user,
                                   project=project_of(user))
    return {"run": run, "item": item, "policy": policy}


def _submit(client, method: str, url: str, data: dict) -> int:
    before = _counts()
    with transaction.atomic():
        response = client.post(url, data) if method == "POST" else client.get(url, data)
        status = response.status_code
        assert status < 500, (url, status, {k: str(v)[:80] for k, v in data.items()})
        event(f"{url.split('/')[1]} {status}")
        if status >= 400:
            assert _counts() == before, (url, status)
        _assert_whole()
        transaction.set_rollback(True)
    return status


NEW_RUN = {"prompt": "What is 2 + 2?", "provider": "sim", "mode": "tools", "temperature": "0.7", "max_steps": "5",
           "max_tokens": "1000", "reruns": "1", "seed": "1", "sim_latency_ms": "0"}


@PROPERTY_SETTINGS
@given(data=_form(NEW_RUN, [*NEW_RUN, "task", "model_name", "policy", "fault_timeout", "fault_junk", "sim_forget"]))
def test_the_new_run_form(admin_client, world, data):
    _submit(admin_client, "POST", "/runs/new/", data)


POLICY = {"name": "p1", "description": "d", "use_json": "on", "config": POLICY_JSON}


@PROPERTY_SETTINGS
@given(data=_form(POLICY, ["name", "description", "use_json", "config", "enabled", "ladder__stop_streak",
                           "windows__stagnation", "thresholds__novelty_min", "ladder__tiers"]),
       edit=st.booleans())
def test_the_policy_form(admin_client, world, data, edit):
    _submit(admin_client, "POST", "/policies/default/edit/" if edit else "/policies/new/", data)


WHATIF = {"config": POLICY_JSON, "sweep_path": "", "sweep_values": "", "task": "", "model": "", "source": ""}


@PROPERTY_SETTINGS
@given(data=_form(WHATIF, [*WHATIF, "policy"]), sweep=st.sampled_from(["", *SWEEPABLE[:3], "nope"]))
def test_the_whatif_form(admin_client, world, data, sweep):
    _submit(admin_client, "POST", "/whatif/", {"sweep_path": sweep, "sweep_values": "1, 2", **data})


@PROPERTY_SETTINGS
@given(data=_form({"value": "justified", "note": "fine"}, ["value", "note"]))
def test_the_review_label_form(admin_client, world, data):
    run, item = world["run"], world["item"]
    _submit(admin_client, "POST", f"/reviews/{run.pk}/{item.step_index}/label/", data)


@PROPERTY_SETTINGS
@given(data=_form({"turns": "3"}, ["turns", "policy"]))
def test_the_review_fork_form(admin_client, world, data):
    run, item = world["run"], world["item"]
    _submit(admin_client, "POST", f"/reviews/{run.pk}/{item.step_index}/fork/", data)


@PROPERTY_SETTINGS
@given(data=_form({"text": "an edited observation", "turns": "3"}, ["text", "turns", "policy"]),
       index=st.sampled_from([1, 2, 5]))
def test_the_step_fork_form(admin_client, world, data, index):
    _submit(admin_client, "POST", f"/reviews/whatif/{world['run'].pk}/{index}/", data)


@PROPERTY_SETTINGS
@given(name=junk, runs=st.lists(junk, max_size=3), with_world=st.booleans())
def test_the_compare_save_form(admin_client, world, name, runs, with_world):
    if with_world:
        runs = [*runs, str(world["run"].pk)]
    _submit(admin_client, "POST", "/compare/save/", {"name": name, "runs": runs})


@PROPERTY_SETTINGS
@given(name=junk)
def test_the_token_form(admin_client, world, name):
    _submit(admin_client, "POST", "/settings/tokens/", {"name": name})


def _encoded(line: str | bytes) -> bytes:
    return line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line


@PROPERTY_SETTINGS
@given(batch=st.lists(st.one_of(lines, junk, st.builds(_dump, plausible_trajectories, st.booleans())), max_size=4),
       source=st.one_of(st.just(""), junk))
def test_the_import_form(admin_client, world, batch, source):
    content = b"\n".join(_encoded(line).replace(b"\n", b" ") for line in batch)
    upload = SimpleUploadedFile("junk.jsonl", content, content_type="application/x-ndjson")
    _submit(admin_client, "POST", "/runs/import/", {"file": upload, "source": source})


RUN_FILTERS = ["status", "task", "model", "mode", "intervened", "detector", "tier", "policy", "steps_min",
               "steps_max", "outcome", "stopped_by", "anchor", "forks", "since", "until", "before", "sort"]
QUEUE_FILTERS = ["detector", "tier", "policy", "task", "model", "label", "sort", "before"]
DASHBOARD_FILTERS = ["since", "until", "task", "model", "mode", "policy"]


@PROPERTY_SETTINGS
@given(page=st.sampled_from([("/runs/", RUN_FILTERS), ("/reviews/", QUEUE_FILTERS),
                             ("/dashboard/", DASHBOARD_FILTERS), ("/compare/", ["runs", "by"]),
                             ("/compare/cell/", ["run", "step"]), ("/compare/diff/", ["a", "b", "runs"]),
                             ("/reviews/figures/", QUEUE_FILTERS), ("/reviews/export.csv", QUEUE_FILTERS),
                             ("/runs/{run}/steps/", ["after"]), ("/reviews/{run}/3/fork/steps/", ["after"]),
                             ("/whatif/", ["policy"]), ("/runs/new/", ["task"])]),
       data=st.data())
def test_the_filter_forms(admin_client, world, page, data):
    url, names = page
    url = url.format(run=world["run"].pk)
    query = data.draw(st.fixed_dictionaries({}, optional=dict.fromkeys(names, junk)))
    _submit(admin_client, "GET", url, query)
