"""Break labels and demotion: the services (the Celery task's service called directly)."""

from __future__ import annotations

import pytest

from agentlab.projects.models import Membership, Project, Role
from runs.breaks import rule
from runs.breaks.models import BreakLabel, PatternState
from runs.breaks.reanalysis import breaks_reanalyse
from runs.breaks.selectors import demoted_patterns, pattern_rows, settings_of
from runs.breaks.services import BreakError, break_label, break_settings_set, pattern_override
from runs.launch.run_analysis import runs_analyse
from tests.runs.breaks.breaks_helpers import requery_run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.BREAKS_REANALYSE_INLINE = True


@pytest.fixture
def other_project(db):
    return Project.objects.create(name="Other", slug="other")


def _reviewers(django_user_model, project, n: int):
    out = []
    for i in range(n):
        someone = django_user_model.objects.create_user(f"rev{project.pk}-{i}")
        Membership.objects.create(user=someone, project=project, role=Role.REVIEWER)
        out.append(someone)
    return out


def test_a_label_judges_the_shown_break_and_relabelling_updates_it(make_run, user):
    run = requery_run(make_run)
    assert run.first_anchor_break == 4 and run.anchor_evidence["pattern"] == "requery"
    first = break_label(run=run, reviewer=user, verdict="none", note="it checked, on purpose")
    again = break_label(run=run, reviewer=user, verdict="right", step=4)
    assert first.pk == again.pk
    label = BreakLabel.objects.get()
    assert (label.step, label.pattern, label.verdict, label.note, label.project_id) == (4, "requery", "right", "",
                                                                                       run.project_id)
    assert label.updated_at >= label.created_at


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"verdict": "maybe"}, "verdict must be one of right, earlier, later, none"),
    ({"verdict": "none", "note": "x" * 4001}, "note: longer than 4000"),
    ({"verdict": "none", "note": "a\x00b"}, "note: contains a NUL"),
    ({"verdict": "none", "step": 2}, "step: the run's shown break is now step 4, not step 2"),
])
def test_bad_input_names_the_field(make_run, user, kwargs, message):
    run = requery_run(make_run)
    with pytest.raises(BreakError, match=message):
        break_label(run=run, reviewer=user, **kwargs)
    assert not BreakLabel.objects.exists()


def test_a_run_with_no_shown_break_has_nothing_to_label(make_run, user):
    run = make_run(steps=3)
    with pytest.raises(BreakError, match=f"run {run.pk} has no shown break to judge"):
        break_label(run=run, reviewer=user, verdict="none")


def test_labels_survive_re_analysis(make_run, user):
    run = requery_run(make_run)
    break_label(run=run, reviewer=user, verdict="earlier", note="step 3 already")
    runs_analyse([run.pk], recompute_signals=True)
    label = BreakLabel.objects.get(run=run)
    assert (label.step, label.pattern, label.verdict, label.note) == (4, "requery", "earlier", "step 3 already")


def test_twenty_rejections_demote_the_pattern_in_that_project_only(make_run, user, project, other_project,
                                                                   django_user_model,
                                                                   django_capture_on_commit_callbacks):
    ours = [requery_run(make_run, then_fails=i % 2 == 0) for i in range(20)]
    theirs = requery_run(make_run, project=other_project)
    for i, run in enumerate(ours):
        with django_capture_on_commit_callbacks(execute=True):
            break_label(run=run, reviewer=user, verdict="none")
        # 19 labels are one short of the rule's minimum.
        assert PatternState.objects.get(project=project, pattern="requery").demoted is (i == 19)
    assert demoted_patterns([project.pk, other_project.pk]) == {project.pk: frozenset({"requery"}),
                                                                 other_project.pk: frozenset()}
    for run in ours:
        run.refresh_from_db()
        findings = [(f["step"], f["pattern"], f["strength"]) for f in run.anchor_findings]
        assert (4, "requery", "weak") in findings
        # The next strong break is shown where there is one; else none.
        assert (run.first_anchor_break, run.anchor_evidence.get("pattern")) in ((8, "unconfirmed_success"), (None, None))
    assert sum(run.first_anchor_break == 8 for run in ours) == 10
    theirs.refresh_from_db()
    assert (theirs.first_anchor_break, theirs.anchor_evidence["pattern"]) == (4, "requery")
    # Labels stay, and so does the verdict they earned.
    assert BreakLabel.objects.filter(project=project, pattern="requery").count() == 20
    row = next(r for r in pattern_rows(project.pk, settings_of(project.pk)) if r.pattern == "requery")
    assert row.demoted and row.state == "demoted: precision under the floor" and row.shown.runs == 0
    assert row.restorable.runs == 20 and row.restorable.failed == 0
    # A new run of the project is analysed with the pattern demoted from the start.
    fresh = requery_run(make_run)
    assert fresh.first_anchor_break is None


def test_an_admin_undoes_a_demotion_and_the_breaks_come_back(make_run, user, project,
                                                             django_capture_on_commit_callbacks):
    runs = [requery_run(make_run) for _ in range(3)]
    break_settings_set(project_id=project.pk, floor=0.5, min_labels=3)
    for run in runs:
        with django_capture_on_commit_callbacks(execute=True):
            break_label(run=run, reviewer=user, verdict="later")
    assert all(r.first_anchor_break is None for r in [type(runs[0]).objects.get(pk=x.pk) for x in runs])
    with django_capture_on_commit_callbacks(execute=True):
        changed = pattern_override(project_id=project.pk, pattern="requery", override=rule.FORCE_SHOWN, user=user)
    assert changed == ["requery"]
    for run in runs:
        run.refresh_from_db()
        assert (run.first_anchor_break, run.anchor_evidence["pattern"]) == (4, "requery")
    state = PatternState.objects.get(project=project, pattern="requery")
    assert (state.override, state.demoted) == ("shown", False)
    # Back to the rule: demoted again.
    with django_capture_on_commit_callbacks(execute=True):
        assert pattern_override(project_id=project.pk, pattern="requery", override="", user=user) == ["requery"]
    assert type(runs[0]).objects.get(pk=runs[0].pk).first_anchor_break is None


def test_an_admin_demotes_by_hand_before_any_label(make_run, user, project, django_capture_on_commit_callbacks):
    run = requery_run(make_run, then_fails=True)
    with django_capture_on_commit_callbacks(execute=True):
        pattern_override(project_id=project.pk, pattern="requery", override=rule.FORCE_DEMOTED, user=user)
    run.refresh_from_db()
    assert (run.first_anchor_break, run.anchor_evidence["pattern"]) == (8, "unconfirmed_success")


def test_raising_the_floor_demotes_what_was_kept(make_run, user, project, django_capture_on_commit_callbacks):
    runs = [requery_run(make_run) for _ in range(4)]
    for run, verdict in zip(runs, ["right", "right", "none", "none"], strict=True):
        break_label(run=run, reviewer=user, verdict=verdict)
    assert break_settings_set(project_id=project.pk, floor=0.5, min_labels=4) == []  # 50% is on the floor
    with django_capture_on_commit_callbacks(execute=True):
        assert break_settings_set(project_id=project.pk, floor=0.6, min_labels=4) == ["requery"]
    assert all(type(r).objects.get(pk=r.pk).first_anchor_break is None for r in runs)


def test_unknown_pattern_and_override_are_refused(project, user):
    with pytest.raises(BreakError, match="pattern: 'nope' is not a break pattern"):
        pattern_override(project_id=project.pk, pattern="nope", override="", user=user)
    with pytest.raises(BreakError, match="override must be one of"):
        pattern_override(project_id=project.pk, pattern="requery", override="always", user=user)


def test_the_task_service_follows_the_state_when_it_runs(make_run, project):
    run = requery_run(make_run)
    PatternState.objects.create(project=project, pattern="requery", demoted=True)
    assert breaks_reanalyse(project.pk, "requery") == 1
    run.refresh_from_db()
    assert run.first_anchor_break is None
    PatternState.objects.filter(project=project).update(demoted=False)
    assert breaks_reanalyse(project.pk, "requery") == 1
    run.refresh_from_db()
    assert run.first_anchor_break == 4
