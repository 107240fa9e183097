"""The run page's verdict panel, the Breaks page, the rule and override forms,
the export: with and without htmx, as reviewer, viewer, admin, a member of
another project and anonymous."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agentlab.projects.models import Membership, Project, Role
from runs.breaks.models import BreakLabel, BreakSettings, PatternState
from runs.breaks.services import break_label
from tests.htmx import hx
from tests.runs.breaks.breaks_helpers import requery_run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.BREAKS_REANALYSE_INLINE = True


@pytest.fixture
def as_role(client, member):
    def sign_in(role: str):
        someone = member(f"someone-{role}", role)
        client.force_login(someone)
        return someone

    return sign_in


def _label(client, run, **data):
    return client.post(reverse("breaks:label", args=[run.pk]), {"verdict": "none", "step": 4, **data},
                       headers=hx("break-panel"))


# -- the run page ----------------------------------------------------------------


def test_the_run_page_offers_the_verdicts_to_a_reviewer(client, make_run, as_role):
    run = requery_run(make_run)
    as_role("reviewer")
    body = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="break-panel"' in body and "Is step 4 where it lost its anchor?" in body
    assert body.count('data-break-key="') == 4 and 'name="step" value="4"' in body
    assert "breaks.js" in body


def test_a_viewer_sees_the_panel_without_buttons(client, make_run, as_role):
    run = requery_run(make_run)
    as_role("viewer")
    body = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "needs the reviewer role" in body and "data-break-key" not in body


def test_a_run_with_no_break_has_no_panel(auth_client, make_run):
    run = make_run(steps=3)
    assert 'id="break-panel"' not in auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()


def test_a_reviewer_labels_with_htmx_and_gets_the_panel_back(client, make_run, as_role):
    run = requery_run(make_run)
    rita = as_role("reviewer")
    response = _label(client, run, verdict="earlier", note="<b>step 3</b> was the lapse")
    body = response.content.decode()
    assert response.status_code == 200 and body.startswith('<section id="break-panel"')
    assert 'value="earlier" data-break-key="2" class="current" aria-pressed="true"' in body
    assert "&lt;b&gt;step 3&lt;/b&gt;" in body and "<b>step 3" not in body  # the note is escaped
    label = BreakLabel.objects.get()
    assert (label.reviewer, label.verdict, label.step, label.pattern) == (rita, "earlier", 4, "requery")


def test_without_htmx_it_redirects_to_the_run_page(client, make_run, as_role):
    run = requery_run(make_run)
    as_role("reviewer")
    response = client.post(reverse("breaks:label", args=[run.pk]), {"verdict": "right"})
    assert response.status_code == 302 and response["Location"] == f"{run.get_absolute_url()}#break-panel"
    assert BreakLabel.objects.get().verdict == "right"


def test_a_viewer_gets_403_naming_the_role(client, make_run, as_role):
    run = requery_run(make_run)
    as_role("viewer")
    response = _label(client, run)
    assert response.status_code == 403 and b"reviewer" in response.content
    assert not BreakLabel.objects.exists()


def test_a_run_of_another_project_is_a_404(client, make_run, django_user_model):
    other = Project.objects.create(name="Other", slug="other")
    olga = django_user_model.objects.create_user("olga")
    Membership.objects.create(user=olga, project=other, role=Role.ADMIN)
    run = requery_run(make_run)
    client.force_login(olga)
    assert _label(client, run).status_code == 404
    assert not BreakLabel.objects.exists()


def test_anonymous_is_sent_to_log_in(client, make_run):
    run = requery_run(make_run)
    response = _label(client, run)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize(("data", "message"), [
    ({"verdict": "maybe"}, "verdict must be one of right, earlier, later, none"),
    ({"verdict": ""}, "verdict must be one of"),
    ({"step": "x"}, "step must be a step index"),
    ({"step": 3}, "step: the run's shown break is now step 4"),
])
def test_bad_input_is_a_400_naming_the_field(client, make_run, as_role, data, message):
    run = requery_run(make_run)
    as_role("reviewer")
    response = _label(client, run, **data)
    assert response.status_code == 400 and message in response.content.decode()
    assert response["Content-Type"].startswith("text/plain")


def test_a_run_with_no_shown_break_is_a_400_saying_why(client, make_run, as_role):
    run = make_run(steps=3)
    as_role("reviewer")
    response = client.post(reverse("breaks:label", args=[run.pk]), {"verdict": "none"}, headers=hx("break-panel"))
    assert response.status_code == 400
    assert f"run {run.pk} has no shown break to judge" in response.content.decode()


def test_after_the_demoting_label_the_run_shows_its_next_break(client, make_run, as_role, project,
                                                    django_capture_on_commit_callbacks):
    BreakSettings.objects.create(project=project, floor=0.5, min_labels=1)
    run = requery_run(make_run, then_fails=True)
    as_role("reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        assert _label(client, run).status_code == 200
    run.refresh_from_db()
    assert run.first_anchor_break == 8
    body = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "Is step 8 where it lost its anchor?" in body
    # The verdict on the break it showed before stays, marked as about another step.
    assert '<li class="old" title="a break this run showed before it was re-analysed">' in body


# -- the Breaks page ---------------------------------------------------------------


def _rejected(make_run, user, n: int, **fields):
    runs = [requery_run(make_run, **fields) for _ in range(n)]
    for run in runs:
        break_label(run=run, reviewer=user, verdict="none")
    return runs


def test_the_breaks_page_lists_each_pattern_with_its_precision(auth_client, make_run, user):
    _rejected(make_run, user, 3)
    body = auth_client.get(reverse("breaks:page")).content.decode()
    assert "Breaks in Team" in body and 'id="breaks-table"' in body
    row = body[body.index('id="pattern-requery"'):]
    row = row[:row.index("</tr>")]
    assert f'{reverse("runs:list")}?anchor=requery' in row
    assert "<strong>0.00</strong>" in row and "· 0.50" in row and "(3 of 20 labels)" in row and ">shown<" in row
    assert "if demoted: <strong>3</strong> runs change" in row
    assert "demote by hand" in row  # alice is an admin
    assert 'id="pattern-phantom_call"' in body  # a pattern nobody labelled is listed too


def test_the_table_alone_with_htmx(auth_client):
    response = auth_client.get(reverse("breaks:page"), headers=hx("breaks-table"))
    body = response.content.decode()
    assert body.startswith('<div id="breaks-table"') and "<html" not in body


def test_a_viewer_reads_the_page_without_admin_forms(client, as_role):
    as_role("viewer")
    body = client.get(reverse("breaks:page")).content.decode()
    assert "demote by hand" not in body and "Save rule" not in body


def test_the_page_runs_a_constant_number_of_queries(auth_client, make_run, user, project,
                                                    django_assert_num_queries):
    _rejected(make_run, user, 2)
    PatternState.objects.filter(project=project, pattern="requery").update(demoted=True)
    # 1 session, 2 user, 3 memberships of the user, 4 the project's rule, 5 verdicts per pattern, 6 shown breaks
    # per pattern and outcome, 7 the patterns' states, 8 runs holding a demoted pattern as a finding (what-if)
    with django_assert_num_queries(8):
        auth_client.get(reverse("breaks:page"))
    PatternState.objects.filter(project=project).update(demoted=False)
    # The same, with nothing demoted: no what-if query for restored patterns.
    with django_assert_num_queries(7):
        auth_client.get(reverse("breaks:page"))


def test_demoted_in_one_project_only(client, make_run, user, project, django_user_model,
                                     django_capture_on_commit_callbacks):
    other = Project.objects.create(name="Other", slug="other")
    olga = django_user_model.objects.create_user("olga")
    Membership.objects.create(user=olga, project=other, role=Role.ADMIN)
    theirs = requery_run(make_run, project=other)
    with django_capture_on_commit_callbacks(execute=True):
        _rejected(make_run, user, 20)
    client.force_login(user)
    body = client.get(reverse("breaks:page")).content.decode()
    assert "demoted: precision under the floor" in body and "undo: keep shown" in body
    client.force_login(olga)
    body = client.get(reverse("breaks:page")).content.decode()
    assert "demoted: precision under the floor" not in body
    assert "Is step 4 where it lost its anchor?" in client.get(reverse("runs:detail", args=[theirs.pk])).content.decode()


def test_an_admin_undoes_the_demotion_from_the_page(auth_client, make_run, user, project,
                                                   django_capture_on_commit_callbacks):
    BreakSettings.objects.create(project=project, floor=0.5, min_labels=2)
    with django_capture_on_commit_callbacks(execute=True):
        runs = _rejected(make_run, user, 2)
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(reverse("breaks:pattern", args=["requery"]), {"override": "shown"},
                                    headers=hx("breaks-table"))
    body = response.content.decode()
    assert response.status_code == 200 and body.startswith('<div id="breaks-table"')
    assert "Changed: asked again for what it had" in body and "kept shown by an admin (under the floor)" in body
    runs[0].refresh_from_db()
    assert runs[0].first_anchor_break == 4


def test_only_an_admin_changes_the_rule(client, as_role, project):
    as_role("reviewer")
    response = client.post(reverse("breaks:settings"), {"floor": 70, "min_labels": 5}, headers=hx("breaks-table"))
    assert response.status_code == 403 and b"admin" in response.content
    assert not BreakSettings.objects.exists()


def test_the_rule_form_refuses_bad_values_naming_the_field(auth_client):
    response = auth_client.post(reverse("breaks:settings"), {"floor": 150, "min_labels": 0})
    body = response.content.decode()
    assert response.status_code == 400 and "floor:" in body and "min_labels:" in body


def test_the_rule_form_without_htmx_redirects(auth_client, project):
    response = auth_client.post(reverse("breaks:settings"), {"floor": 70, "min_labels": 5})
    assert response.status_code == 302 and response["Location"] == reverse("breaks:page")
    conf = BreakSettings.objects.get(project=project)
    assert (conf.floor, conf.min_labels) == (0.7, 5)


def test_an_unknown_pattern_is_a_400(auth_client):
    response = auth_client.post(reverse("breaks:pattern", args=["nope"]), {"override": "demoted"})
    assert response.status_code == 400 and b"pattern: 'nope' is not a break pattern" in response.content


# -- export ----------------------------------------------------------------------


def test_the_labels_export_as_csv_and_jsonl(auth_client, make_run, user):
    run = requery_run(make_run)
    break_label(run=run, reviewer=user, verdict="later", note="=HYPERLINK(1)")
    csv_body = b"".join(auth_client.get(reverse("breaks:export_csv")).streaming_content).decode()
    header, line = csv_body.splitlines()[:2]
    assert header.startswith("run,step,pattern,verdict,reviewer,note")
    assert f"{run.pk},4,requery,later,alice,'=HYPERLINK(1)" in line
    rows = [json.loads(x) for x in b"".join(auth_client.get(reverse("breaks:export_jsonl")).streaming_content).splitlines()]
    assert rows[0]["verdict"] == "later" and rows[0]["shown_break_now"] == 4
    assert rows[0]["evidence"]["pattern"] == "requery"


def test_the_export_is_the_current_projects(client, make_run, user, django_user_model):
    run = requery_run(make_run)
    break_label(run=run, reviewer=user, verdict="later")
    other = Project.objects.create(name="Other", slug="other")
    olga = django_user_model.objects.create_user("olga")
    Membership.objects.create(user=olga, project=other, role=Role.ADMIN)
    client.force_login(olga)
    assert b"".join(client.get(reverse("breaks:export_jsonl")).streaming_content) == b""
