"""The review queue's pages and htmx endpoints, as reviewer, reader and anonymous."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from runs.reviews.models import ForkOutcome, LabelState, ReviewItem, ReviewLabel
from tests.htmx import hx, more_row_id
from tests.runs.reviews.test_reviews_helpers import grant_reviewer, interrupted_run
from tracing.store.models import Step

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


@pytest.fixture
def run(make_run):
    return interrupted_run(make_run)


@pytest.fixture
def reviewer_client(client, user):
    client.force_login(grant_reviewer(user))
    return client


@pytest.fixture
def enqueued(monkeypatch):
    """Forks are sent nowhere: the worker tests cover the real queue."""
    from runs.launch.tasks import execute_run

    sent = []
    monkeypatch.setattr(execute_run, "apply_async", lambda args, **kw: sent.append(args[0]))
    return sent


def urls(run, index=6):
    return {
        "queue": reverse("reviews:queue"),
        "item": reverse("reviews:item", args=[run.pk, index]),
        "figures": reverse("reviews:figures"),
        "csv": reverse("reviews:export_csv"),
        "jsonl": reverse("reviews:export_jsonl"),
        "poll": reverse("reviews:fork_steps", args=[run.pk, index]),
        "whatif": reverse("reviews:whatif", args=[run.pk, 2]),
    }


# -- access --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["queue", "item", "figures", "csv", "jsonl", "poll", "whatif"])
@pytest.mark.parametrize("headers", [{}, HX])
def test_anonymous_users_are_sent_to_login(client, run, name, headers):
    response = client.get(urls(run)[name], headers=headers)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("action", ["label", "fork"])
def test_anonymous_posts_are_sent_to_login(client, run, action):
    response = client.post(reverse(f"reviews:{action}", args=[run.pk, 6]), {"value": "justified"}, headers=HX)
    assert response.status_code == 302
    assert not ReviewLabel.objects.exists()


@pytest.mark.parametrize("headers", [{}, HX])
def test_readers_can_read_but_not_label_or_fork(client, member, run, headers, enqueued):
    auth_client = client
    auth_client.force_login(member("vera", "viewer"))
    assert auth_client.get(urls(run)["queue"], headers=headers).status_code == 200
    page = auth_client.get(urls(run)["item"], headers=headers)
    assert page.status_code == 200
    assert "labelling needs the reviewer role" in page.content.decode()
    label = auth_client.post(reverse("reviews:label", args=[run.pk, 6]), {"value": "justified"}, headers=headers)
    fork = auth_client.post(reverse("reviews:fork", args=[run.pk, 6]), {"turns": 5}, headers=headers)
    whatif = auth_client.post(urls(run)["whatif"], {"text": "x", "turns": 5}, headers=headers)
    assert (label.status_code, fork.status_code, whatif.status_code) == (403, 403, 403)
    assert not ReviewLabel.objects.exists() and not enqueued


# -- labelling -------------------------------------------------------------------


def test_a_label_by_htmx_returns_the_label_panel_and_the_row(reviewer_client, run, user):
    response = reviewer_client.post(reverse("reviews:label", args=[run.pk, 6]),
                                    {"value": "wrongly_killed", "note": "<b>close</b> call"}, headers=HX)
    assert response.status_code == 200
    body = response.content.decode()
    item = ReviewItem.objects.get(run=run, step_index=6)
    assert 'id="label-panel"' in body
    assert f'id="ri-{item.pk}"' in body and 'hx-swap-oob="true"' in body
    assert "&lt;b&gt;close&lt;/b&gt; call" in body and "<b>close" not in body
    assert item.label == LabelState.WRONGLY_KILLED
    label = ReviewLabel.objects.get()
    assert (label.reviewer_id, label.value, label.note) == (user.pk, "wrongly_killed", "<b>close</b> call")


def test_a_label_without_htmx_redirects_to_the_item(reviewer_client, run):
    response = reviewer_client.post(reverse("reviews:label", args=[run.pk, 9]), {"value": "justified"})
    assert response.status_code == 302 and response["Location"] == reverse("reviews:item", args=[run.pk, 9])


@pytest.mark.parametrize("headers", [{}, HX])
def test_a_label_value_outside_the_set_is_a_400_with_a_message(reviewer_client, run, headers):
    response = reviewer_client.post(reverse("reviews:label", args=[run.pk, 6]), {"value": "meh"}, headers=headers)
    assert response.status_code == 400
    assert "justified, wrongly_killed, unsure" in response.content.decode()
    assert not ReviewLabel.objects.exists()


@pytest.mark.parametrize("index", [0, 2, 7, 99])
def test_labelling_a_step_that_is_not_an_interruption_is_a_404(reviewer_client, run, index):
    response = reviewer_client.post(reverse("reviews:label", args=[run.pk, index]), {"value": "justified"}, headers=HX)
    assert response.status_code == 404
    assert reviewer_client.post(reverse("reviews:label", args=[run.pk + 1000, 6]), {"value": "justified"}).status_code == 404


def test_an_interruption_of_a_run_not_yet_synced_is_labelled_after_a_sync(reviewer_client, make_run):
    from tests.runs.reviews.test_reviews_helpers import REPETITION_EVIDENCE, add_step

    live = make_run(steps=3, status="running")
    add_step(live, 3, "intervention", "hint", detector="repetition", tier="hint", evidence=REPETITION_EVIDENCE)
    assert not ReviewItem.objects.exists()
    response = reviewer_client.post(reverse("reviews:label", args=[live.pk, 3]), {"value": "unsure"}, headers=HX)
    assert response.status_code == 200
    assert ReviewItem.objects.get(run=live, step_index=3).label == LabelState.UNSURE


# -- the queue -----------------------------------------------------------------


def test_the_queue_page_query_count_is_constant(auth_client, make_run, django_assert_num_queries):
    for _ in range(3):
        interrupted_run(make_run)
    url = reverse("reviews:queue")
    # session, user, memberships of the user (current project, the header's switcher), the page of items (+ task), policies for the filter, tasks for the filter
    with django_assert_num_queries(6):
        small = auth_client.get(url)
    for _ in range(30):
        interrupted_run(make_run)
    with django_assert_num_queries(6):
        big = auth_client.get(url)
    assert small.content.decode().count('class="review-row"') == 6
    assert big.content.decode().count('class="review-row"') == 50
    # The htmx page of rows: session, user, memberships of the user, the page of items (+ task).
    with django_assert_num_queries(4):
        rows = auth_client.get(url, {"sort": "uncertain"}, headers=hx(more_row_id(big.content.decode())))
    assert "<html" not in rows.content.decode()


def test_keyset_pages_cover_every_item_once_in_both_orders(auth_client, make_run):
    for _ in range(31):
        interrupted_run(make_run)  # 62 items
    for sort in ("newest", "uncertain"):
        seen, query, headers = [], f"?sort={sort}", {}
        while query:
            # The first page as the browser opens it, the next ones as its "older" link asks for them.
            response = auth_client.get(reverse("reviews:queue") + query, headers=headers)
            body = response.content.decode()
            headers = hx(more_row_id(body))
            seen += [int(chunk.split('"', 1)[0]) for chunk in body.split('id="ri-')[1:]]
            more = more_row_id(body)
            query = (body.split(f'id="{more}"', 1)[1].split('hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
                     if more else "")
        assert sorted(seen) == sorted(ReviewItem.objects.values_list("pk", flat=True))
        assert len(seen) == len(set(seen)) == 62
    assert auth_client.get(reverse("reviews:queue"), {"before": "garbage"}).status_code == 200


def test_the_queue_filters(auth_client, make_run, user):
    from runs.reviews import services as reviews

    a = interrupted_run(make_run, model_name="gpt-x")
    interrupted_run(make_run)
    item = ReviewItem.objects.get(run=a, step_index=9)
    reviews.review_label(item_id=item.pk, reviewer=user, value="justified")

    def shown(**params):
        body = auth_client.get(reverse("reviews:queue"), params).content.decode()
        return body.count('class="review-row"')

    assert shown() == 4
    assert shown(detector="stagnation") == 2
    assert shown(tier="hint") == 2
    assert shown(model="gpt-x") == 2
    assert shown(label="justified") == 1 and shown(label="labelled") == 1 and shown(label="unlabelled") == 3
    assert shown(policy="default") == 4 and shown(policy="default:1") == 4 and shown(policy="other") == 0
    assert shown(task="capital-demo") == 4 and shown(task="nope") == 0
    assert shown(label="nonsense") == 0  # an invalid filter shows nothing rather than everything


def test_the_item_pane_shows_the_trajectory_around_the_interruption(auth_client, run, django_assert_num_queries):
    url = reverse("reviews:item", args=[run.pk, 9])
    # session, user, memberships of the user (project and role), the item (+ run, task, policy,
    # fork), the step window, its labels, policies for the fork form
    with django_assert_num_queries(7):
        response = auth_client.get(url, headers=HX)
    body = response.content.decode()
    assert "<html" not in body
    for i in range(10):
        assert f'id="step-{i}"' in body
    assert "nothing came after" in body and "evidence" in body
    full = auth_client.get(url)
    assert "<html" in full.content.decode() and 'id="review-item"' in full.content.decode()
    assert auth_client.get(reverse("reviews:item", args=[run.pk, 3])).status_code == 404


# -- forks ---------------------------------------------------------------------


def test_continue_without_the_watchdog_starts_a_fork_and_polls_it(reviewer_client, run, enqueued):
    response = reviewer_client.post(reverse("reviews:fork", args=[run.pk, 9]), {"turns": 3, "policy": ""}, headers=HX)
    assert response.status_code == 200
    item = ReviewItem.objects.select_related("fork").get(run=run, step_index=9)
    assert enqueued == [item.fork_id]
    assert item.fork.parent_id == run.pk and item.fork.fork_from == 9 and item.fork.policy is None
    assert item.fork.settings["fork"]["turns"] == 3
    assert item.fork_outcome == ForkOutcome.RUNNING
    assert 'id="fork-poller"' in response.content.decode() and "every 1s" in response.content.decode()
    poll = reverse("reviews:fork_steps", args=[run.pk, 9])
    assert reviewer_client.get(poll, {"after": -1}, headers=HX).status_code == 200  # queued: keep polling
    # The fork ends in error (as a dead endpoint would):
    from runs.core.models import Run
    from tests.runs.reviews.test_reviews_helpers import add_step

    add_step(item.fork, 9, "error", "Connection error: the model endpoint refused the connection")
    Run.objects.filter(pk=item.fork_id).update(status="error", reason="Connection error: refused")
    done = reviewer_client.get(poll, {"after": -1}, headers=HX)
    assert done.status_code == 286
    body = done.content.decode()
    assert "the fork ended in error: Connection error: refused" in body and 'id="step-9"' in body
    item.refresh_from_db()
    assert item.fork_outcome == ForkOutcome.ERROR
    pane = reviewer_client.get(reverse("reviews:item", args=[run.pk, 9]), headers=HX).content.decode()
    assert "the fork ended in error" in pane


def test_a_fork_with_a_bad_turn_count_is_a_400(reviewer_client, run, enqueued):
    response = reviewer_client.post(reverse("reviews:fork", args=[run.pk, 9]), {"turns": 0}, headers=HX)
    assert response.status_code == 400 and "turns" in response.content.decode()
    assert not enqueued


def test_what_if_forks_from_an_edited_observation(reviewer_client, run, enqueued):
    url = reverse("reviews:whatif", args=[run.pk, 2])
    page = reviewer_client.get(url)
    assert page.status_code == 200 and "observation number 2" in page.content.decode()
    response = reviewer_client.post(url, {"text": "It has 640 seats.", "turns": 4, "policy": ""})
    assert response.status_code == 302
    from runs.core.models import Run

    fork = Run.objects.get(parent=run)
    assert response["Location"] == fork.get_absolute_url()
    edited = Step.objects.get(run=fork, index=2)
    assert edited.text == "It has 640 seats." and edited.meta["edited"] is True
    assert enqueued == [fork.pk]
    assert reviewer_client.get(reverse("reviews:whatif", args=[run.pk, 1])).status_code == 404  # an action
    # The run page's observation and thought rows link here.
    assert f'href="{url}"' in reviewer_client.get(run.get_absolute_url()).content.decode()


# -- figures and export ----------------------------------------------------------


def test_figures_show_rates_and_kappa(auth_client, run, user, other_user):
    from runs.reviews import services as reviews

    item = ReviewItem.objects.get(run=run, step_index=6)
    reviews.review_label(item_id=item.pk, reviewer=user, value="wrongly_killed")
    reviews.review_label(item_id=item.pk, reviewer=other_user, value="wrongly_killed")
    body = auth_client.get(reverse("reviews:figures"), headers=HX).content.decode()
    assert "review-chart-data" in body and "repetition" in body and "κ" in body
    page = auth_client.get(reverse("reviews:figures")).content.decode()
    assert "plotly/plotly.min.js" in page and "cdn" not in page.lower()


def test_export_csv_and_jsonl(auth_client, run, user):
    from runs.reviews import services as reviews

    item = ReviewItem.objects.get(run=run, step_index=6)
    reviews.review_label(item_id=item.pk, reviewer=user, value="justified", note="first")
    reviews.review_label(item_id=item.pk, reviewer=user, value="wrongly_killed", note='comma, "quote"\nnewline')
    ReviewItem.objects.filter(pk=item.pk).update(fork_outcome=ForkOutcome.SUCCEEDED, fork_turns=2)

    response = auth_client.get(reverse("reviews:export_csv"))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 1
    row = rows[0]
    assert (row["run"], row["step"], row["detector"], row["tier"]) == (str(run.pk), "6", "repetition", "hint")
    assert row["label"] == "wrongly_killed" and row["note"] == 'comma, "quote"\nnewline'
    assert json.loads(row["evidence"])["scores"]["similarity"] == 0.9
    assert row["fork_outcome"] == "succeeded" and row["fork_turns"] == "2"

    response = auth_client.get(reverse("reviews:export_jsonl"), {"history": "1"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [(x["label"], x["current"]) for x in lines] == [("justified", False), ("wrongly_killed", True)]
    assert lines[1]["evidence"]["policy"] == "default" and lines[1]["fork_outcome"] == "succeeded"
    assert lines[0]["reviewer"] == "alice" and lines[0]["task"] == "capital-demo"


def test_a_note_that_is_a_spreadsheet_formula_is_exported_as_text(auth_client, run, user):
    from runs.reviews import services as reviews

    item = ReviewItem.objects.get(run=run, step_index=6)
    reviews.review_label(item_id=item.pk, reviewer=user, value="justified", note="=cmd|' /C calc'!A0")
    response = auth_client.get(reverse("reviews:export_csv"))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["note"] == "'=cmd|' /C calc'!A0"
