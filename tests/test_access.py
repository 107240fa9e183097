"""Who may do what, for every URL pattern: the run's owner, a member by each
role, a member of another project, anonymous (DESIGN.md 3, issue 13).

The world: project "team" where alice (a reviewer) owns the runs, vera is a
viewer, rita a reviewer, adam an admin; project "other" where olga is admin
(and has an API token). Every URL pattern the resolver knows must have a
row here: test_the_matrix_covers_every_url_pattern walks
django.urls.get_resolver(), so a view added later fails until its author
says who may use it.

A row names the least role a request needs (`need`) and what a member with
it gets (`ok`); a member below it gets 403; olga gets `outsider` (404 for
anything of another project: it looks missing; her own project's page when
the URL names none); anonymous gets the login page (pages) or 401 (API).
Requests are sent as the browser sends them: htmx ones carry HX-Request and,
when their target has an id, HX-Target.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from agentlab.projects.invites import invite_create
from agentlab.projects.models import Invite, Membership, Project, Role
from runs.approvals.models import Approval
from runs.core.models import Policy, RerunGroup, Run
from runs.evaluations.models import Evaluation
from runs.reviews.services import review_items_sync
from runs.whatif.models import WhatIfJob
from tests.htmx import hx
from tracing.core.model_calls import ModelCallRecord
from tracing.core.steps import Step as StepRecord
from tracing.store.call_store import CallRecorder
from tracing.store.ingest.writes import token_create
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db

RANK = {"viewer": 0, "reviewer": 1, "admin": 2}
# Actor -> role in "team". alice owns the world's runs.
ACTORS = {"owner": "reviewer", "viewer": "viewer", "reviewer": "reviewer", "admin": "admin"}


@dataclass(frozen=True)
class Case:
    name: str  # the URL pattern's name
    kwargs: tuple = ()  # (world attribute, ...) for the pattern's arguments
    method: str = "get"
    query: dict = field(default_factory=dict)
    data: dict | str | None = None
    headers: dict = field(default_factory=dict)
    ok: int = 200
    # viewer | reviewer | admin | stop (the run's owner or an admin) | public (anyone, signed in or not)
    need: str = "viewer"
    kind: str = "page"  # page (login redirect when anonymous) | api (401) | public
    outsider: int = 404  # what a member of another project gets
    label: str = ""
    own_run: bool = False  # API: only the run's owner's token writes it (others with the role get 404)

    @property
    def id(self) -> str:
        return f"{self.name}{'-' + self.label if self.label else ''}"


def _world_query(world, query: dict) -> dict:
    return {k: (v(world) if callable(v) else v) for k, v in query.items()}


PASSWORD = "correct horse battery staple"
OWN = 200  # for outsider: a page of the current project, which for olga is hers

CASES = [
    # runs
    Case("runs:list", outsider=OWN),
    Case("runs:list", query={"before": lambda w: f"{w.run.created_at.isoformat()}_{w.run.pk + 1}"},
         headers=hx("more-runs"), outsider=OWN, label="more-rows"),
    Case("runs:new", outsider=OWN),
    Case("runs:new", method="post", data={"prompt": "x", "provider": "sim", "mode": "tools", "temperature": 0.5,
                                          "max_steps": 3, "max_tokens": 1000, "reruns": 1},
         need="reviewer", ok=302, outsider=302, label="launch"),
    Case("runs:import", outsider=OWN),
    Case("runs:import", method="post", data={"source": "x"}, need="reviewer", ok=400, outsider=400, label="upload"),
    Case("runs:import_sample", outsider=OWN),
    Case("runs:detail", ("run",)),
    Case("runs:steps", ("run",), query={"after": -1}, headers=hx("poller")),
    Case("runs:stop", ("live_run",), method="post", headers=hx("run-header"), need="stop"),
    Case("runs:stop", ("live_run",), method="post", need="stop", ok=302, label="no-js"),
    Case("runs:export", ("run",)),
    Case("runs:live_rows", query={"ids": lambda w: f"{w.api_run.pk},{w.run.pk}"}, headers=hx("live-runs"),
         outsider=286),
    Case("runs:waterfall", ("run",), headers=hx()),
    Case("runs:waterfall", ("run",), label="no-js"),
    Case("runs:spans", ("run",), headers=hx()),
    Case("runs:spans", ("run",), label="no-js"),
    Case("runs:call", ("run", "zero")),
    Case("runs:call", ("run", "zero"), headers=hx(), label="panel"),
    Case("runs:call_json", ("run", "zero")),
    Case("runs:call_replay", ("run", "zero"), headers=hx()),
    # A form error: the access checks come first, and no model is called.
    Case("runs:call_replay", ("run", "zero"), method="post", data={"provider": "openai", "content_0": "x"},
         headers=hx(), ok=400, need="reviewer", label="bad"),
    Case("runs:labels", ("run",), headers=hx("run-labels")),
    Case("runs:labels", ("run",), query={"edit": 1}, headers=hx("run-labels"), need="reviewer", label="form"),
    Case("runs:labels", ("run",), method="post", data={"tags": "a, b"}, headers=hx("run-labels"), need="reviewer",
         label="save"),
    Case("runs:labels", ("run",), method="post", data={"tags": "a"}, ok=302, need="reviewer", label="no-js"),
    Case("runs:session", query={"id": "s-1"}),  # a session with no run of the project is a 404
    Case("local_model_status", headers=hx("local-model-status"), outsider=OWN),
    # compare
    Case("compare:page", query={"runs": lambda w: f"{w.run.pk},{w.other_run.pk}"}, outsider=400),
    Case("compare:page", query={"runs": lambda w: f"{w.run.pk},{w.other_run.pk}"}, headers=hx("compare-body"),
         ok=286, outsider=400, label="poll"),
    Case("compare:group", ("group",)),
    Case("compare:cell", query={"run": lambda w: w.run.pk, "from": 0, "to": 2}, headers=hx()),
    Case("compare:diff", query={"a": lambda w: w.run.pk, "b": lambda w: w.other_run.pk}, outsider=400),
    Case("compare:save", method="post", data=lambda w: {"runs": f"{w.run.pk},{w.other_run.pk}"}, ok=302,
         need="reviewer", outsider=400),
    # reviews
    Case("reviews:queue", outsider=OWN),
    Case("reviews:figures", outsider=OWN),
    Case("reviews:figures", headers=hx("figures-body"), outsider=OWN, label="pane"),
    Case("reviews:export_csv", outsider=OWN),
    Case("reviews:export_jsonl", outsider=OWN),
    Case("reviews:whatif", ("run", "observation")),
    Case("reviews:whatif", ("run", "observation"), method="post", data={"text": "edited", "turns": 2}, ok=302,
         need="reviewer", label="fork"),
    Case("reviews:item", ("run", "interruption")),
    Case("reviews:item", ("run", "interruption"), headers=hx("review-pane"), label="pane"),
    Case("reviews:label", ("run", "interruption"), method="post", data={"value": "justified"},
         headers=hx("label-panel"), need="reviewer"),
    Case("reviews:fork", ("run", "interruption"), method="post", data={"turns": 2}, headers=hx("fork-panel"),
         need="reviewer"),
    Case("reviews:fork_steps", ("run", "interruption"), query={"after": -1}, headers=hx("fork-poller"), ok=286),
    # break patterns: verdicts on a run's shown break, and their calibration (the world's run shows none: a 400)
    Case("breaks:page", outsider=OWN),
    Case("breaks:page", headers=hx("breaks-table"), outsider=OWN, label="table"),
    Case("breaks:settings", method="post", data={"floor": 50, "min_labels": 20}, headers=hx("breaks-table"),
         need="admin", outsider=OWN),
    Case("breaks:pattern", ("pattern",), method="post", data={"override": "demoted"}, headers=hx("breaks-table"),
         need="admin", outsider=OWN),
    Case("breaks:export_csv", outsider=OWN),
    Case("breaks:export_jsonl", outsider=OWN),
    Case("breaks:label", ("run",), method="post", data={"verdict": "none"}, headers=hx("break-panel"), ok=400,
         need="reviewer"),
    # failures by layer
    Case("failures:queue", outsider=OWN),
    Case("failures:queue", query={"before": lambda w: w.failed_run.pk + 1}, headers=hx("more-failures"),
         outsider=OWN, label="more-rows"),
    Case("failures:item", ("failed_run",)),
    Case("failures:item", ("failed_run",), headers=hx("review-pane"), label="pane"),
    Case("failures:label", ("failed_run",), method="post", data={"layer": "plan"}, headers=hx("label-panel"),
         need="reviewer"),
    # approvals of writing tools
    Case("approvals:list", outsider=OWN),
    Case("approvals:run_panel", ("run",), headers=hx("approval-slot")),
    Case("approvals:decide", ("approval",), method="post", data={"verdict": "approved"}, headers=hx("approval-1"),
         need="reviewer"),
    # dashboard, what-if, policies
    Case("dashboard", outsider=OWN),
    Case("dashboard", query={"export": "by_model"}, outsider=OWN, label="csv"),
    Case("whatif_new", outsider=OWN),
    Case("whatif_job", ("job",)),
    Case("whatif_job", ("job",), headers=hx("whatif-result"), ok=286, label="poll"),
    Case("whatif_save", ("job", "zero"), method="post", ok=302, need="admin"),
    # evaluations (the project's; launching one needs a reviewer)
    Case("evaluations:list", outsider=OWN),
    Case("evaluations:new", outsider=OWN),
    Case("evaluations:new", method="post", data={"tasks": []}, ok=400, need="reviewer", outsider=400,
         label="bad-input"),
    Case("evaluations:detail", ("evaluation",)),
    Case("evaluations:detail", ("evaluation",), headers=hx("evaluation-report"), ok=286, label="poll"),
    Case("policy_list", outsider=OWN),
    Case("policy_new", need="admin", outsider=OWN),
    Case("policy_edit", ("policy_name",), need="admin"),
    Case("policy_edit", ("policy_name",), method="post", data={"name": "default", "config": "{}", "use_json": "on"},
         need="admin", ok=302, label="save"),
    # prices: one table for every project, changed by admins
    Case("prices", outsider=OWN),
    Case("prices", method="post", data={"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "0", "form-0-prefix": "m",
                                        "form-0-prompt_per_m": "-1", "form-0-completion_per_m": "1"},
         ok=400, need="admin", outsider=400, label="bad"),
    # projects
    Case("projects:switch", method="post", data=lambda w: {"project": w.project.pk}, ok=302),
    Case("projects:members", need="admin", outsider=OWN),
    Case("projects:members", method="post", data={"who": "", "role": "viewer"}, need="admin", ok=400,
         outsider=400, label="add-nobody"),
    Case("projects:members", method="post", data={"who": "nobody-yet", "role": "viewer"}, need="admin", ok=302,
         outsider=302, label="invite"),
    Case("projects:member_create", method="post", data={"username": "newbie", "password1": PASSWORD,
                                                         "password2": PASSWORD, "role": "viewer"},
         need="admin", ok=302, outsider=302),
    Case("projects:invite_revoke", ("invite",), method="post", need="admin", ok=302),
    # An invite's link: public (its token is the credential); used or expired 410, never issued 404.
    Case("projects:invite_accept", ("invite_token",), need="public", kind="public", outsider=OWN),
    Case("projects:invite_accept", ("invite_token",), method="post",
         data={"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD}, need="public",
         kind="public", ok=302, outsider=302, label="join"),
    Case("projects:invite_accept", ("used_invite_token",), need="public", kind="public", ok=410, outsider=410,
         label="used"),
    Case("projects:invite_accept", ("expired_invite_token",), need="public", kind="public", ok=410, outsider=410,
         label="expired"),
    Case("projects:invite_accept", ("forged_invite_token",), need="public", kind="public", ok=404, outsider=404,
         label="forged"),
    Case("projects:member_role", ("viewer_membership",), method="post", data={"role": "reviewer"}, need="admin",
         ok=302),
    Case("projects:member_remove", ("viewer_membership",), method="post", need="admin", ok=302),
    # deletion (admins): a run, the project (typed confirmation), the records and the retention
    Case("deletion:records", need="admin", outsider=OWN),
    Case("deletion:records", method="post", data={"keep_days": "x"}, need="admin", ok=400, outsider=400,
         label="bad-retention"),
    Case("deletion:run", ("run",), need="admin"),
    Case("deletion:run", ("other_run",), method="post", need="admin", ok=302, label="delete"),
    Case("deletion:project", need="admin", outsider=OWN),
    Case("deletion:project", method="post", data={"confirm": "wrong"}, need="admin", ok=400, outsider=400,
         label="unconfirmed"),
    # health for load balancers and scrapers: public, counts only
    Case("healthz", need="public", kind="public", outsider=OWN),
    Case("metrics", need="public", kind="public", outsider=OWN),
    # the root and accounts
    Case("home", need="public", kind="public", ok=302, outsider=302),
    Case("favicon", need="public", kind="public", ok=301, outsider=301),
    Case("login", need="public", kind="public", outsider=OWN),
    Case("logout", method="post", need="public", kind="public", ok=302, outsider=302),
    # the header's language switch (agentlab/preferences): anyone, signed in or not
    Case("set_language", method="post", data={"language": "zh-hans", "next": "/runs/"}, need="public",
         kind="public", ok=302, outsider=302),
    # API tokens (project admins) and the ingestion API (bearer tokens of a project)
    Case("tracing:tokens", need="admin", outsider=OWN),
    Case("tracing:token_revoke", ("token",), method="post", ok=302, need="admin"),
    Case("tracing:openapi", need="public", kind="public", outsider=OWN),
    # Tokens act with their member's role at the request (viewer reads; reviewer creates, sends, finishes,
    # labels); `own_run`: a write to the token member's own runs, another member's token gets 404.
    Case("tracing:otlp_traces", method="post", data={"resourceSpans": []}, kind="api", need="reviewer",
         outsider=OWN),
    Case("tracing:otlp_logs", method="post", data={"resourceLogs": []}, kind="api", need="reviewer",
         outsider=OWN),
    Case("tracing:api_runs", method="post", data={"prompt": "p"}, kind="api", need="reviewer", ok=201,
         outsider=201),
    Case("tracing:api_run", ("api_run",), kind="api"),
    Case("tracing:api_run", ("api_run",), method="delete", kind="api", need="admin", label="delete"),
    Case("tracing:api_run_steps", ("api_run",), method="post", data={"steps": []}, kind="api", need="reviewer",
         own_run=True),
    Case("tracing:api_run_finish", ("api_run",), method="post", data={"status": "succeeded"}, kind="api",
         need="reviewer", own_run=True),
    Case("tracing:api_run_labels", ("api_run",), method="patch", data={"add_tags": ["x"]}, kind="api",
         need="reviewer", own_run=True),
]


def _names(resolver, prefix: str = "") -> set[str]:
    names = set()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name == "admin":
                continue  # Django's admin guards itself (staff only)
            names |= _names(pattern, f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix)
        elif isinstance(pattern, URLPattern):
            # An unnamed pattern cannot be reversed here: it must get a name to be classified.
            names.add(prefix + (pattern.name or f"<unnamed {pattern.pattern}>"))
    return names


def test_the_matrix_covers_every_url_pattern():
    missing = _names(get_resolver()) - {case.name for case in CASES}
    assert not missing, f"URL patterns nobody said who may use (add rows to CASES): {sorted(missing)}"
    stale = {case.name for case in CASES} - _names(get_resolver())
    assert not stale, f"rows for URL patterns that are gone: {sorted(stale)}"


class World:
    def __init__(self, make_run, alice, project) -> None:
        users = get_user_model().objects
        Membership.objects.filter(user=alice, project=project).update(role=Role.REVIEWER)
        self.project = project
        self.actors = {"owner": alice}
        for actor, username in (("viewer", "vera"), ("reviewer", "rita"), ("admin", "adam")):
            self.actors[actor] = users.create_user(username)
            Membership.objects.create(user=self.actors[actor], project=project, role=ACTORS[actor])
        self.viewer_membership = Membership.objects.get(user=self.actors["viewer"]).pk
        other = Project.objects.create(name="Other", slug="other")
        self.actors["outsider"] = users.create_user("olga")
        Membership.objects.create(user=self.actors["outsider"], project=other, role=Role.ADMIN)

        self.run = make_run(steps=6, owner=alice, status="stopped", session_id="s-1")
        record_step(self.run.pk, StepRecord(index=6, kind="intervention", text="Change approach.",
                                            meta={"detector": "repetition", "tier": "hint", "evidence": {}}))
        review_items_sync(self.run.pk)
        self.other_run = make_run(steps=3, owner=alice)
        self.live_run = make_run(steps=1, owner=alice, status="running")
        self.failed_run = make_run(steps=3, owner=alice, success=False)
        self.approval = Approval.objects.create(run=self.run, step_index=4, tool="send_message", args={"text": "hi"},
                                                expires_at=timezone.now() + timedelta(hours=1))
        self.group = RerunGroup.objects.create(name="g", owner=alice, project=project)
        Run.objects.filter(pk__in=[self.run.pk, self.other_run.pk]).update(group=self.group)
        self.observation, self.interruption, self.zero = 2, 6, 0
        self.pattern = "requery"
        CallRecorder(self.run.pk)(ModelCallRecord(step_index=0, api="chat",
                                                  messages=[{"role": "user", "content": "q"}], params={"model": "sim"}))
        policy = Policy.objects.create(project=project, name="default", config={}, created_by=alice)
        self.policy_name = policy.name
        self.job = WhatIfJob.objects.create(key="k", created_by=alice, project=project, policies=[{}],
                                            snapshot_at=self.run.created_at, status=WhatIfJob.Status.DONE, result=[])
        admin = self.actors["admin"]
        pending, self.invite_token = invite_create(project=project, invitee="newcomer@example.com", role="viewer",
                                                   invited_by=admin)
        self.invite = pending.pk
        used, self.used_invite_token = invite_create(project=project, invitee="used", role="viewer", invited_by=admin)
        expired, self.expired_invite_token = invite_create(project=project, invitee="late", role="viewer",
                                                           invited_by=admin)
        Invite.objects.filter(pk=used.pk).update(used_at=timezone.now())
        Invite.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        self.forged_invite_token = "x" * 43
        self.member_token = token_create(user=alice, project_id=project.pk, name="mine")[1]
        self.tokens = {"owner": self.member_token, **{
            actor: token_create(user=self.actors[actor], project_id=project.pk, name=actor)[1]
            for actor in ("viewer", "reviewer", "admin")}}
        self.outsider_token = token_create(user=self.actors["outsider"], project_id=other.pk, name="theirs")[1]
        self.token = token_create(user=admin, project_id=project.pk, name="admin's")[0].pk
        self.api_run = make_run(owner=alice, status="running", source="api", provider="import")
        self.evaluation = Evaluation.objects.create(owner=alice, project=project, strategies=["no_tools"], reruns=1,
                                                    max_steps=1, max_tokens=1, max_seconds=1)


@pytest.fixture
def world(make_run, user, project, monkeypatch):
    from runs.launch.tasks import execute_run

    monkeypatch.setattr(execute_run, "apply_async", lambda *a, **kw: None)  # runs and forks go nowhere
    return World(make_run, user, project)


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


def expected(case: Case, actor: str) -> int:
    if actor == "outsider":
        return case.outsider
    if case.kind == "api":
        if RANK[ACTORS[actor]] < RANK[case.need]:
            return 403
        return 404 if case.own_run and actor != "owner" else case.ok
    if case.need in ("public", "viewer"):
        return case.ok
    if case.need == "stop":
        return case.ok if actor in ("owner", "admin") else 403
    return case.ok if RANK[ACTORS[actor]] >= RANK[case.need] else 403


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_anonymous(client, world, case):
    response = _request(client, case, world)
    if case.kind == "api":
        assert response.status_code == 401
    elif case.kind == "public":
        assert response.status_code == case.ok
    else:
        assert response.status_code == 302 and response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("actor", [*ACTORS, "outsider"])
@pytest.mark.parametrize("case", [c for c in CASES if c.kind != "api"], ids=lambda case: case.id)
def test_signed_in(client, world, case, actor):
    client.force_login(world.actors[actor])
    response = _request(client, case, world)
    assert response.status_code == expected(case, actor), response.content[:500]


@pytest.mark.parametrize("actor", [*ACTORS, "outsider"])
@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "api"], ids=lambda case: case.id)
def test_api_token(client, world, case, actor):
    token = world.outsider_token if actor == "outsider" else world.tokens[actor]
    response = _request(client, case, world, token=token)
    assert response.status_code == expected(case, actor), response.content[:500]
    if response.status_code == 403:
        # JSON naming the role it needs and the one the token's member has.
        message = response.json()["error"]
        assert f"needs the {case.need} role" in message and f"is a {ACTORS[actor]}" in message


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "api" and c.need == "reviewer"],
                         ids=lambda case: case.id)
def test_a_demoted_members_token_loses_its_writes_at_once(client, world, case):
    """The admin's token wrote; demoted to viewer, the same token is refused on the next request."""
    Membership.objects.filter(user=world.actors["admin"]).update(role=Role.VIEWER)
    response = _request(client, case, world, token=world.tokens["admin"])
    assert response.status_code == 403, response.content[:500]
    assert "needs the reviewer role" in response.json()["error"]


def test_a_viewers_token_still_reads(client, world):
    response = client.get(reverse("tracing:api_run", args=[world.api_run.pk]),
                          headers={"Authorization": f"Bearer {world.tokens['viewer']}"})
    assert response.status_code == 200 and response.json()["id"] == world.api_run.pk
