"""Who may see what, for every URL pattern: owner, another user, anonymous.

One row per request the browser (or an API client) makes, sent as it sends
it: htmx requests carry HX-Request and, when their target has an id,
HX-Target. Anonymous users get the login page (pages) or 401 (API); the
owner gets the page; another signed-in user gets what the code does today.

Today every signed-in user sees every run (RunQuerySet.for_user): for
run-scoped rows another user gets what the owner gets. When runs narrow to
their owner or project, flip OTHER_USER_SEES_OTHERS_RUNS and this matrix
says which views follow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Permission
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from runs.launch.models import RerunGroup, Run
from runs.policies.models import Policy
from runs.reviews.services import review_items_sync
from runs.whatif.models import WhatIfJob
from tests.htmx import hx
from tracing.ingest.writes import token_create
from tracing.models import ApiToken
from tracing.recorder import record_step
from tracing.steps import Step as StepRecord

OTHER_USER_SEES_OTHERS_RUNS = True

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Case:
    name: str  # the URL pattern's name
    kwargs: tuple = ()  # (world attribute, ...) for the pattern's arguments
    method: str = "get"
    query: dict = field(default_factory=dict)
    data: dict | str | None = None
    headers: dict = field(default_factory=dict)
    owner: int = 200
    kind: str = "page"  # page (login redirect) | api (401) | public (as the owner)
    run_scoped: bool = True  # another user's access follows OTHER_USER_SEES_OTHERS_RUNS
    other: int | None = None  # another user's status when it is not the owner's
    label: str = ""

    @property
    def id(self) -> str:
        return f"{self.name}{'-' + self.label if self.label else ''}"


def _world_query(world, query: dict) -> dict:
    return {k: (v(world) if callable(v) else v) for k, v in query.items()}


CASES = [
    # runs
    Case("runs:list"),
    Case("runs:list", query={"before": lambda w: f"{w.run.created_at.isoformat()}_{w.run.pk + 1}"},
         headers=hx("more-runs"), label="more-rows"),
    Case("runs:new"),
    Case("runs:import"),
    Case("runs:import_sample", run_scoped=False),
    Case("runs:detail", ("run",)),
    Case("runs:steps", ("run",), query={"after": -1}, headers=hx("poller")),
    Case("runs:stop", ("run",), method="post", headers=hx("run-header")),
    Case("runs:stop", ("run",), method="post", owner=302, label="no-js"),
    Case("runs:export", ("run",)),
    Case("runs:labels", ("run",), headers=hx("run-labels")),
    Case("runs:labels", ("run",), query={"edit": 1}, headers=hx("run-labels"), label="form"),
    Case("runs:labels", ("run",), method="post", data={"tags": "a, b"}, headers=hx("run-labels"), label="save"),
    Case("runs:labels", ("run",), method="post", data={"tags": "a"}, owner=302, label="no-js"),
    Case("runs:session", query={"id": "s-1"}),
    Case("local_model_status", headers=hx("local-model-status")),
    # compare
    Case("compare:page", query={"runs": lambda w: f"{w.run.pk},{w.other_run.pk}"}),
    Case("compare:page", query={"runs": lambda w: f"{w.run.pk},{w.other_run.pk}"}, headers=hx("compare-body"),
         owner=286, label="poll"),
    Case("compare:group", ("group",)),
    Case("compare:cell", query={"run": lambda w: w.run.pk, "from": 0, "to": 2}, headers=hx()),
    Case("compare:diff", query={"a": lambda w: w.run.pk, "b": lambda w: w.other_run.pk}),
    Case("compare:save", method="post", data=lambda w: {"runs": f"{w.run.pk},{w.other_run.pk}"}, owner=302),
    # reviews
    Case("reviews:queue"),
    Case("reviews:figures"),
    Case("reviews:figures", headers=hx("figures-body"), label="pane"),
    Case("reviews:export_csv"),
    Case("reviews:export_jsonl"),
    Case("reviews:whatif", ("run", "observation")),
    Case("reviews:whatif", ("run", "observation"), method="post", data={"text": "edited", "turns": 2}, owner=302,
         label="fork"),
    Case("reviews:item", ("run", "interruption")),
    Case("reviews:item", ("run", "interruption"), headers=hx("review-pane"), label="pane"),
    Case("reviews:label", ("run", "interruption"), method="post", data={"value": "justified"},
         headers=hx("label-panel")),
    Case("reviews:fork", ("run", "interruption"), method="post", data={"turns": 2}, headers=hx("fork-panel")),
    Case("reviews:fork_steps", ("run", "interruption"), query={"after": -1}, headers=hx("fork-poller"), owner=286),
    # dashboard, what-if, policies
    Case("dashboard"),
    Case("whatif_new"),
    Case("whatif_job", ("job",)),
    Case("whatif_job", ("job",), headers=hx("whatif-result"), owner=286, label="poll"),
    Case("whatif_save", ("job", "zero"), method="post", owner=302),
    Case("policy_list", run_scoped=False),
    Case("policy_new", run_scoped=False),
    Case("policy_edit", ("policy_name",), run_scoped=False),
    # accounts
    Case("login", kind="public", run_scoped=False),
    Case("logout", method="post", kind="public", owner=302, run_scoped=False),
    # API tokens (a user's own) and the ingestion API (bearer tokens)
    Case("tracing:tokens", run_scoped=False),
    Case("tracing:token_revoke", ("token",), method="post", owner=302, run_scoped=False, other=404),
    Case("tracing:openapi", kind="public", run_scoped=False),
    Case("tracing:otlp_traces", method="post", data={"resourceSpans": []}, kind="api", run_scoped=False),
    Case("tracing:api_runs", method="post", data={"prompt": "p"}, kind="api", owner=201, run_scoped=False),
    Case("tracing:api_run", ("api_run",), kind="api", run_scoped=False, other=404),
    Case("tracing:api_run_steps", ("api_run",), method="post", data={"steps": []}, kind="api", run_scoped=False,
         other=404),
    Case("tracing:api_run_finish", ("api_run",), method="post", data={"status": "succeeded"}, kind="api",
         run_scoped=False, other=404),
    Case("tracing:api_run_labels", ("api_run",), method="patch", data={"add_tags": ["x"]}, kind="api",
         run_scoped=False, other=404),
]


def _names(resolver, prefix: str = "") -> set[str]:
    names = set()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name == "admin":
                continue  # Django's admin guards itself (staff only)
            names |= _names(pattern, f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(prefix + pattern.name)
    return names


def test_the_matrix_covers_every_url_pattern():
    assert _names(get_resolver()) == {case.name for case in CASES}


class World:
    """What the owner owns: runs with steps and an interruption, a group, a what-if, a policy, tokens."""

    def __init__(self, make_run, owner, other) -> None:
        self.run = make_run(steps=6, owner=owner, status="stopped", session_id="s-1")
        record_step(self.run.pk, StepRecord(index=6, kind="intervention", text="Change approach.",
                                            meta={"detector": "repetition", "tier": "hint", "evidence": {}}))
        review_items_sync(self.run.pk)
        self.other_run = make_run(steps=3, owner=owner)
        self.group = RerunGroup.objects.create(name="g", owner=owner)
        Run.objects.filter(pk__in=[self.run.pk, self.other_run.pk]).update(group=self.group)
        self.observation, self.interruption, self.zero = 2, 6, 0
        policy = Policy.objects.create(name="default", config={}, created_by=owner)
        self.policy_name = policy.name
        self.job = WhatIfJob.objects.create(key="k", created_by=owner, policies=[{}], snapshot_at=self.run.created_at,
                                            status=WhatIfJob.Status.DONE, result=[])
        self.owner_token = token_create(user=owner, name="mine")[1]
        self.other_token = token_create(user=other, name="theirs")[1]
        self.token = ApiToken.objects.get(user=owner).pk
        self.api_run = make_run(owner=owner, status="running", source="api", provider="import")


@pytest.fixture
def world(make_run, user, other_user, monkeypatch):
    from runs.launch.tasks import execute_run

    monkeypatch.setattr(execute_run, "apply_async", lambda *a, **kw: None)  # forks go nowhere
    return World(make_run, user, other_user)


def _reviewer(user):
    user.user_permissions.add(Permission.objects.get(codename="label_interruption"))
    return type(user).objects.get(pk=user.pk)


def _request(client, case: Case, world: World, *, token: str | None = None):
    args = [getattr(world, name) for name in case.kwargs]
    url = reverse(case.name, args=[getattr(arg, "pk", arg) for arg in args])
    query = _world_query(world, case.query)
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    headers = dict(case.headers)
    data = case.data(world) if callable(case.data) else case.data
    if case.kind == "api":
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return getattr(client, case.method)(url, json.dumps(data) if data is not None else None,
                                            content_type="application/json", headers=headers)
    if case.method == "post":
        return client.post(url, data or {}, headers=headers)
    return client.get(url, headers=headers)


def _expected_other(case: Case) -> int:
    if case.other is not None:
        return case.other
    if case.run_scoped and not OTHER_USER_SEES_OTHERS_RUNS:
        return 404
    return case.owner


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_anonymous(client, world, case):
    response = _request(client, case, world)
    if case.kind == "api":
        assert response.status_code == 401
    elif case.kind == "public":
        assert response.status_code == case.owner
    else:
        assert response.status_code == 302 and response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_owner(client, user, world, case):
    client.force_login(_reviewer(user))
    response = _request(client, case, world, token=world.owner_token)
    assert response.status_code == case.owner, response.content[:500]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_other_user(client, other_user, world, case):
    client.force_login(_reviewer(other_user))
    response = _request(client, case, world, token=world.other_token)
    assert response.status_code == _expected_other(case), response.content[:500]
