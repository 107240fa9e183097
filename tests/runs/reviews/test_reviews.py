"""Review items, labels, agreement and false-kill figures: the services."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from runs.reviews import priors, selectors
from runs.reviews import services as reviews
from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from tests.runs.reviews.test_reviews_helpers import REPETITION_EVIDENCE as REPETITION
from tests.runs.reviews.test_reviews_helpers import add_step, interrupted_run
from tracing.core.watchdog import DEFAULT_POLICY

pytestmark = pytest.mark.django_db


def test_sync_makes_one_item_per_interruption_and_is_idempotent(make_run, user):
    run = interrupted_run(make_run)
    items = list(ReviewItem.objects.filter(run=run).order_by("step_index"))
    assert [(i.step_index, i.detector, i.tier) for i in items] == [(6, "repetition", "hint"), (9, "stagnation", "stop")]
    assert items[0].policy_name == "default" and items[0].policy_version == 1
    assert items[0].task_id == run.task_id and items[0].model_name == run.model_name
    threshold = DEFAULT_POLICY.thresholds.repetition_similarity
    assert items[0].threshold == f"thresholds.repetition_similarity>={threshold}"
    assert items[0].thresholds["score"] == 0.9 and items[0].thresholds["value"] == threshold
    # A stop is decided by the non-progress streak against the ladder's stop_streak.
    assert items[1].threshold == "ladder.stop_streak>=6"
    reviews.review_label(item_id=items[0].pk, reviewer=user, value="justified")
    assert reviews.review_items_sync(run.pk) == 2
    assert ReviewItem.objects.filter(run=run).count() == 2
    # A re-sync keeps the reviewers' columns.
    assert ReviewItem.objects.get(pk=items[0].pk).label == LabelState.JUSTIFIED


def test_budget_and_user_interruptions_become_items(make_run):
    run = make_run(steps=3, status="finished", success=False)
    add_step(run, 3, "intervention", "Step budget exhausted.", detector="budget", tier="stop",
             evidence={"limit": "max_steps", "turns": 30, "tokens": 900, "max_steps": 30, "max_tokens": 20000})
    add_step(run, 4, "intervention", "Stopped by the user.", detector="user", tier="stop", evidence={})
    reviews.review_items_sync(run.pk)
    budget, user_stop = ReviewItem.objects.filter(run=run).order_by("step_index")
    assert budget.threshold == "max_steps=30" and budget.prior == priors.BUDGET_PRIOR
    assert user_stop.detector == "user" and user_stop.threshold == "" and user_stop.prior == priors.USER_PRIOR


def test_a_run_without_interruptions_has_no_items(make_run):
    run = make_run(steps=5)
    assert reviews.review_items_sync(run.pk) == 0
    assert not ReviewItem.objects.exists()


def test_the_run_ended_signal_syncs_the_items(make_run):
    from tracing.store.signals import send_run_ended

    run = make_run(steps=3)
    add_step(run, 3, "intervention", "hint", detector="repetition", tier="hint", evidence=REPETITION)
    send_run_ended(run.pk)
    assert ReviewItem.objects.filter(run=run, step_index=3).exists()


def _evidence(name, value, score, op=">="):
    return {"scores": {}, "threshold": {"name": name, "value": value, "score": score, "op": op}}


@pytest.mark.parametrize(("score", "expected"), [
    (DEFAULT_POLICY.thresholds.repetition_similarity, 1.0),  # on the threshold: a coin toss
    (1.0, 0.0),  # as far past it as the scale goes: clear-cut
])
def test_prior_is_highest_on_the_threshold_and_falls_past_it(score, expected):
    evidence = _evidence("thresholds.repetition_similarity", DEFAULT_POLICY.thresholds.repetition_similarity, score)
    assert priors.threshold_snapshot("repetition", evidence)[2] == pytest.approx(expected)


def test_prior_of_a_count_threshold():
    # invalid_run 2 against a window of 2: on the threshold; 4: a whole width past.
    for score, prior in ((2, 1.0), (3, 0.5), (4, 0.0)):
        assert priors.threshold_snapshot("observation", _evidence("windows.invalid_run", 2, score))[2] == prior


def test_prior_of_a_threshold_met_from_below():
    # "<=" thresholds fire as the score falls: 0.1 under a 0.2 minimum is half a width past it.
    assert priors.threshold_snapshot("observation", _evidence("thresholds.novelty_min", 0.2, 0.2, "<="))[2] == 1.0
    assert priors.threshold_snapshot("observation", _evidence("thresholds.novelty_min", 0.2, 0.1, "<="))[2] == 0.5


def test_evidence_without_a_recorded_threshold_gets_the_unknown_prior():
    # Stored before the watchdog recorded its threshold: the rule is not rebuilt.
    key, snapshot, prior = priors.threshold_snapshot("observation", {"scores": {"invalid_run": 2}})
    assert (key, snapshot, prior) == ("", {"scores": {"invalid_run": 2}}, priors.UNKNOWN_PRIOR)


# Long and multi-hop: the watchdog's complexity factor is above 1, so a window
# of 2 invalid results becomes an effective threshold of 3.
COMPLEX_GOAL = ("Which of the two companies named in the annual report, and both of their subsidiaries in "
                "Norway and Sweden, reported the higher adjusted revenue between 2019 and 2021, and by how much?")


def test_a_scaled_window_is_recorded_with_its_effective_value(make_run):
    from tracing.core.steps import Step as StepRecord
    from tracing.core.watchdog import Watchdog, estimate_complexity
    from tracing.store.recorder import record_step

    assert estimate_complexity(COMPLEX_GOAL) > 1.0
    assert DEFAULT_POLICY.windows.invalid_run == 2
    watchdog = Watchdog(DEFAULT_POLICY, goal=COMPLEX_GOAL)
    run = make_run(prompt=COMPLEX_GOAL)
    index, intervention = 0, None
    for turn in range(6):
        for step in (StepRecord(index, "action", tool="search", args={"query": f"revenue {turn} " * (turn + 1)}),
                     StepRecord(index + 1, "observation", f"No results for query {turn}.", tool="search",
                                meta={"status": "empty"})):
            record_step(run.pk, step)
            intervention = intervention or watchdog.observe(step)
        index += 2
        if intervention is not None:
            break
    assert intervention is not None and intervention.detector == "observation"
    record_step(run.pk, StepRecord(index, "intervention", intervention.message,
                                   meta={"detector": intervention.detector, "tier": intervention.tier,
                                         "evidence": intervention.evidence}))
    reviews.review_items_sync(run.pk)
    item = ReviewItem.objects.get(run=run, step_index=index)
    assert item.threshold == "windows.invalid_run>=3"
    assert item.thresholds["value"] == 3 and item.thresholds["score"] == 3
    assert item.prior == 1.0  # met exactly: the closest call there is


def test_uncertainty_orders_disputes_first_and_settled_items_last():
    prior = 0.7
    assert priors.uncertainty_of(prior, LabelState.DISPUTED, "") == priors.DISPUTED_UNCERTAINTY
    assert priors.uncertainty_of(prior, LabelState.UNSURE, "") == priors.UNSURE_UNCERTAINTY
    assert priors.uncertainty_of(prior, LabelState.UNLABELLED, "") == prior
    assert priors.uncertainty_of(prior, LabelState.JUSTIFIED, "") == pytest.approx(prior * priors.SETTLED_FACTOR)
    assert priors.uncertainty_of(0.1, LabelState.UNLABELLED, ForkOutcome.SUCCEEDED) == priors.FORK_SUCCEEDED_FLOOR
    assert priors.uncertainty_of(prior, LabelState.UNLABELLED, ForkOutcome.LOOPED) < prior


# -- labels --------------------------------------------------------------------


@pytest.fixture
def item(make_run):
    run = interrupted_run(make_run)
    return ReviewItem.objects.get(run=run, step_index=6)


def test_a_changed_label_keeps_the_old_one_as_history(item, user):
    first = reviews.review_label(item_id=item.pk, reviewer=user, value="justified", note="looping")
    second = reviews.review_label(item_id=item.pk, reviewer=user, value="wrongly_killed", note="it was close")
    first.refresh_from_db()
    assert not first.is_current and first.superseded_by_id == second.pk
    assert second.is_current and second.superseded_by_id is None
    item.refresh_from_db()
    assert item.label == LabelState.WRONGLY_KILLED and item.label_count == 1
    assert item.uncertainty == pytest.approx(item.prior * priors.SETTLED_FACTOR)


def test_a_double_submit_stores_one_label(item, user):
    a = reviews.review_label(item_id=item.pk, reviewer=user, value="unsure", note=" hm ")
    b = reviews.review_label(item_id=item.pk, reviewer=user, value="unsure", note="hm")
    assert a.pk == b.pk
    assert ReviewLabel.objects.filter(item=item).count() == 1


def test_two_reviewers_who_disagree_make_a_disputed_item(item, user, other_user):
    reviews.review_label(item_id=item.pk, reviewer=user, value="justified")
    reviews.review_label(item_id=item.pk, reviewer=other_user, value="wrongly_killed")
    item.refresh_from_db()
    assert item.label == LabelState.DISPUTED and item.label_count == 2
    assert item.uncertainty == priors.DISPUTED_UNCERTAINTY
    reviews.review_label(item_id=item.pk, reviewer=other_user, value="justified")
    item.refresh_from_db()
    assert item.label == LabelState.JUSTIFIED and item.label_count == 2


@pytest.mark.parametrize("value", ["", "JUSTIFIED", "killed", "1"])
def test_a_label_outside_the_set_is_refused(item, user, value):
    with pytest.raises(reviews.ReviewError, match="must be one of"):
        reviews.review_label(item_id=item.pk, reviewer=user, value=value)
    assert not ReviewLabel.objects.exists()


def test_a_note_over_the_limit_is_refused(item, user):
    reviews.review_label(item_id=item.pk, reviewer=user, value="unsure", note="x" * reviews.NOTE_MAX_CHARS)
    with pytest.raises(reviews.ReviewError, match="longer"):
        reviews.review_label(item_id=item.pk, reviewer=user, value="unsure", note="x" * (reviews.NOTE_MAX_CHARS + 1))


def test_the_database_allows_one_current_label_per_reviewer(item, user):
    ReviewLabel.objects.create(item=item, reviewer=user, value="justified")
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewLabel.objects.create(item=item, reviewer=user, value="unsure")
    ReviewLabel.objects.create(item=item, reviewer=user, value="unsure", is_current=False)  # history is fine
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewLabel.objects.create(item=item, reviewer=user, value="maybe", is_current=False)


# -- agreement -----------------------------------------------------------------

J, W, U = "justified", "wrongly_killed", "unsure"


def test_kappa_against_a_hand_computed_table():
    # 50 items: both J 20, J/W 5, W/J 10, both W 15.
    # p_o = 35/50 = 0.7; rater A says J 25/50, rater B 30/50;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7-0.5)/(1-0.5) = 0.4.
    pairs = [(J, J)] * 20 + [(J, W)] * 5 + [(W, J)] * 10 + [(W, W)] * 15
    assert selectors.cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_with_three_categories():
    # 5 of 6 agree: p_o = 30/36; A: J3 W2 U1, B: J2 W3 U1;
    # p_e = (3*2 + 2*3 + 1*1)/36 = 13/36; kappa = (30/36 - 13/36) / (23/36) = 17/23.
    pairs = [(J, J), (J, J), (J, W), (W, W), (W, W), (U, U)]
    assert selectors.cohen_kappa(pairs) == pytest.approx(17 / 23)


def test_kappa_edge_cases():
    assert selectors.cohen_kappa([]) is None
    assert selectors.cohen_kappa([(J, J), (J, J)]) is None  # one category: 0/0
    assert selectors.cohen_kappa([(J, J), (W, W)]) == pytest.approx(1.0)
    assert selectors.cohen_kappa([(J, W), (W, J)]) == pytest.approx(-1.0)


def test_agreement_over_items_with_two_reviewers(make_run, user, other_user, django_user_model):
    third = django_user_model.objects.create_user("carol")
    runs = [interrupted_run(make_run) for _ in range(3)]
    items = list(ReviewItem.objects.filter(run__in=runs).order_by("pk"))
    answers = [(J, J), (J, W), (W, W), (W, W), (U, J), (J, J)]
    for item, (a, b) in zip(items, answers, strict=True):
        reviews.review_label(item_id=item.pk, reviewer=user, value=a)
        reviews.review_label(item_id=item.pk, reviewer=other_user, value=b)
    reviews.review_label(item_id=items[0].pk, reviewer=third, value=W)  # a third opinion: pairs only
    agreement = selectors.review_agreement()
    assert agreement.items == 6
    assert agreement.kappa == pytest.approx(selectors.cohen_kappa(answers))
    pairs = {(a, b): (n, k) for a, b, n, k in agreement.pairs}
    assert pairs[("alice", "bob")][0] == 6
    assert pairs[("alice", "carol")][0] == 1 and pairs[("bob", "carol")][0] == 1


# -- figures and forks ---------------------------------------------------------


def test_false_kill_figures_per_detector_tier_policy_and_threshold(make_run, user, other_user):
    runs = [interrupted_run(make_run) for _ in range(4)]
    hints = list(ReviewItem.objects.filter(run__in=runs, detector="repetition").order_by("pk"))
    stops = list(ReviewItem.objects.filter(run__in=runs, detector="stagnation").order_by("pk"))
    for item, value in zip(hints, [J, W, W, U], strict=True):
        reviews.review_label(item_id=item.pk, reviewer=user, value=value)
    reviews.review_label(item_id=stops[0].pk, reviewer=user, value=J)
    reviews.review_label(item_id=stops[0].pk, reviewer=other_user, value=W)  # disputed
    ReviewItem.objects.filter(pk=stops[1].pk).update(fork_outcome=ForkOutcome.SUCCEEDED)
    ReviewItem.objects.filter(pk=stops[2].pk).update(fork_outcome=ForkOutcome.LOOPED)
    ReviewItem.objects.filter(pk=stops[3].pk).update(fork_outcome=ForkOutcome.RUNNING)  # not finished: left out
    ReviewItem.objects.filter(pk=hints[0].pk).update(fork_outcome=ForkOutcome.SUCCEEDED)  # a hint: not a stop
    figures = selectors.false_kill_figures()
    by_detector = {row.key: row for row in figures["detector"]}
    rep = by_detector["repetition"]
    assert (rep.labelled, rep.justified, rep.wrongly_killed, rep.unsure) == (4, 1, 2, 1)
    assert rep.false_kill_rate == pytest.approx(2 / 3)
    assert rep.stop_forks == 0 and rep.fork_success_rate is None
    stag = by_detector["stagnation"]
    assert (stag.labelled, stag.disputed, stag.decided) == (1, 1, 0)
    assert stag.false_kill_rate is None
    assert (stag.stop_forks, stag.stop_forks_succeeded) == (2, 1) and stag.fork_success_rate == 0.5
    assert {row.key for row in figures["tier"]} == {"hint", "stop"}
    assert [row.key for row in figures["policy"]] == ["default v1"]
    assert {row.key for row in figures["threshold"]} == {
        f"repetition: thresholds.repetition_similarity>={DEFAULT_POLICY.thresholds.repetition_similarity}",
        "stagnation: ladder.stop_streak>=6"}


def _run(**fields):
    from runs.core.models import Run

    return Run(**{"status": "finished", "success": None, "stopped_by": "", "reason": "", **fields})


@pytest.mark.parametrize(("fields", "outcome", "sentence"), [
    ({"success": True}, ForkOutcome.SUCCEEDED, "the fork succeeded 2 steps later"),
    ({"success": False, "reason": "wrong answer"}, ForkOutcome.FAILED, "the fork failed 2 steps later: wrong answer"),
    ({"status": "failed", "stopped_by": "max_steps", "reason": "step budget exhausted"}, ForkOutcome.LOOPED,
     "the fork looped again: step budget exhausted"),
    ({"status": "error", "reason": "Connection error."}, ForkOutcome.ERROR, "the fork ended in error: Connection error."),
])
def test_fork_result_and_sentence(fields, outcome, sentence):
    result = reviews.fork_result(_run(**fields), 2)
    assert result.outcome == outcome
    assert selectors.fork_sentence(result.outcome, result.turns, result.reason) == sentence


def test_a_fork_from_an_interruption_settles_its_item_when_it_ends(user, looping_run):
    from runs.agent.sim_server import sim_client
    from runs.launch import execution, services

    run = looping_run
    item = ReviewItem.objects.filter(run=run).order_by("step_index").first()
    assert item is not None, "run_finish should have synced the watchdog's interruptions"
    fork = services.fork_create(parent=run, fork_from=item.step_index, owner=user, enqueue=False)
    ReviewItem.objects.filter(pk=item.pk).update(fork=fork, fork_outcome=ForkOutcome.RUNNING)
    fork = execution.run_execute(run_id=fork.pk, client=sim_client())
    item.refresh_from_db()
    assert item.fork_outcome in (ForkOutcome.SUCCEEDED, ForkOutcome.FAILED, ForkOutcome.LOOPED)
    assert item.fork_turns and item.fork_turns >= 1
    assert (item.fork_outcome == ForkOutcome.SUCCEEDED) == bool(fork.success)
