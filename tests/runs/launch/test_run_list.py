from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.models import Run
from tests.htmx import hx, more_row_id
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db
URL = reverse("runs:list")


def test_it_requires_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_it_lists_runs_with_status_task_model_steps(auth_client, make_run):
    make_run(steps=3, status=Run.Status.FINISHED, success=True)
    response = auth_client.get(URL)
    body = response.content.decode()
    assert response.status_code == 200
    assert "capital-demo" in body
    assert "finished" in body
    assert "simulated" in body  # the sim model is labelled everywhere


def test_it_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    for _ in range(30):
        make_run(steps=0)
    # 1 session, 2 user, 3 memberships of the user, 4 runs page (with task joined), 5 the price table, 6 the
    # reconciler's last sweep (the banner), 7 task choices
    with django_assert_num_queries(7):
        auth_client.get(URL)


def test_it_filters_by_status_and_model(auth_client, make_run):
    ok = make_run(status=Run.Status.FINISHED, model_name="sim")
    bad = make_run(status=Run.Status.ERROR, model_name="gpt-x")
    body = auth_client.get(URL, {"status": "error"}).content.decode()
    assert f'href="/runs/{bad.pk}/"' in body and f'href="/runs/{ok.pk}/"' not in body
    body = auth_client.get(URL, {"model": "sim"}).content.decode()
    assert f'href="/runs/{ok.pk}/"' in body and f'href="/runs/{bad.pk}/"' not in body


def test_keyset_pagination_walks_every_run_once(auth_client, make_run):
    created = {make_run().pk for _ in range(120)}
    seen: list[int] = []
    params: dict = {}
    for _ in range(5):
        response = auth_client.get(URL, params)
        page = response.context["runs"]
        seen.extend(r.pk for r in page)
        if not response.context["next_query"]:
            break
        params = {"before": response.context["runs"][-1].created_at.isoformat() + f"_{page[-1].pk}"}
    assert sorted(seen) == sorted(created)
    assert len(seen) == len(set(seen))


def test_a_bad_filter_value_gets_a_message_not_a_crash(auth_client, make_run):
    make_run()
    response = auth_client.get(URL, {"status": "exploded", "since": "yesterday"})
    assert response.status_code == 200
    assert response.context["runs"] == []
    assert "status" in response.content.decode()


def test_a_bad_cursor_gets_a_message(auth_client, make_run):
    make_run()
    response = auth_client.get(URL, {"before": "not-a-cursor"})
    assert response.status_code == 200
    assert "start from the first page" in response.content.decode()


def test_htmx_next_page_returns_rows_only(auth_client, make_run):
    for _ in range(55):
        make_run()
    first = auth_client.get(URL)
    query = first.context["next_query"]
    # The "older runs" link swaps its own row: htmx names that row in HX-Target.
    response = auth_client.get(f"{URL}?{query}", headers=hx(more_row_id(first.content.decode())))
    body = response.content.decode()
    assert "<table" not in body
    assert body.count("<tr id=\"run-") == 5


def test_htmx_filter_form_gets_the_page(auth_client, make_run):
    # The filter form swaps #run-table out of the whole page (hx-select).
    make_run()
    response = auth_client.get(URL, {"status": "finished"}, headers=hx("run-table"))
    assert 'id="run-table"' in response.content.decode()


def test_it_filters_by_intervention_detector_tier_and_anchoring(auth_client, make_run):
    calm = make_run()
    hinted = make_run(intervention_count=1, intervention_detectors=["repetition"], intervention_tiers=["hint"])
    stopped = make_run(intervention_count=2, intervention_detectors=["budget"], intervention_tiers=["stop"],
                       first_anchor_break=4, anchor_reason="x")

    def ids(**params):
        return {r.pk for r in auth_client.get(URL, params).context["runs"]}

    assert ids(intervened="yes") == {hinted.pk, stopped.pk}
    assert ids(intervened="no") == {calm.pk}
    assert ids(detector="repetition") == {hinted.pk}
    assert ids(tier="stop") == {stopped.pk}
    assert ids(anchor="broken") == {stopped.pk}
    assert ids(anchor="kept") == {calm.pk, hinted.pk}
    body = auth_client.get(URL).content.decode()
    assert f'href="/runs/{stopped.pk}/#step-4"' in body  # the anchor column jumps to the break


@pytest.mark.parametrize("sort", ["-steps", "steps", "-tokens", "tokens", "created", "-created"])
def test_every_sort_pages_through_every_run_once_in_order(auth_client, make_run, sort):
    import random

    rng = random.Random(1)
    created = {make_run(step_count=rng.randint(0, 9), prompt_tokens=rng.randint(0, 5)).pk for _ in range(120)}
    seen = []
    params = {"sort": sort}
    for _ in range(5):
        response = auth_client.get(URL, params)
        seen.extend(response.context["runs"])
        if not response.context["next_query"]:
            break
        params = dict(pair.split("=", 1) for pair in response.context["next_query"].split("&"))
        from urllib.parse import unquote

        params = {k: unquote(v) for k, v in params.items()}
    assert sorted(r.pk for r in seen) == sorted(created)
    key = {"steps": lambda r: (r.step_count, r.pk), "tokens": lambda r: (r.total_tokens, r.pk),
           "created": lambda r: (r.created_at, r.pk)}[sort.lstrip("-")]
    assert [key(r) for r in seen] == sorted((key(r) for r in seen), reverse=sort.startswith("-"))


def test_a_sorted_page_keeps_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    for i in range(30):
        make_run(step_count=i)
    # 1 session, 2 user, 3 memberships of the user, 4 runs page (task and policy joined), 5 the price table,
    # 6 the reconciler's last sweep (the banner), 7 task choices
    with django_assert_num_queries(7):
        auth_client.get(URL, {"sort": "-steps"})
    body = auth_client.get(URL, {"sort": "-steps"}).content.decode()
    assert "steps ▼" in body and "sort=steps" in body  # the header flips the order


def test_the_anchoring_filter_offers_every_pattern(auth_client, make_run, django_assert_num_queries):
    from tracing.core.anchoring import PATTERNS

    phantom = make_run(first_anchor_break=2, anchor_reason="r", anchor_evidence={"pattern": "phantom_call"})
    stale = make_run(first_anchor_break=4, anchor_reason="r", anchor_evidence={"pattern": "stale_value"})
    kept = make_run()
    # 1 session, 2 user, 3 memberships of the user, 4 runs page (with task joined), 5 the price table, 6 the
    # reconciler's last sweep (the banner), 7 task choices
    with django_assert_num_queries(7):
        response = auth_client.get(URL, {"anchor": "phantom_call"})
    body = response.content.decode()
    for pattern in PATTERNS:
        assert f'<option value="{pattern}"' in body
    assert "lost it: claimed a call it never made" in body
    assert f'href="/runs/{phantom.pk}/"' in body
    assert f'href="/runs/{stale.pk}/"' not in body and f'href="/runs/{kept.pk}/"' not in body
    body = auth_client.get(URL, {"anchor": "broken"}).content.decode()
    assert f'href="/runs/{phantom.pk}/"' in body and f'href="/runs/{stale.pk}/"' in body
    assert auth_client.get(URL, {"anchor": "nonsense"}).context["runs"] == []


def test_outcome_filters_include_unscored(auth_client, make_run):
    right, wrong, unscored = make_run(success=True), make_run(success=False), make_run(success=None)
    ids = {o: {r.pk for r in auth_client.get(URL, {"outcome": o}).context["runs"]}
           for o in ("correct", "wrong", "unscored")}
    assert ids == {"correct": {right.pk}, "wrong": {wrong.pk}, "unscored": {unscored.pk}}


def test_an_old_link_with_a_status_that_is_now_an_outcome_still_works(auth_client, make_run):
    right, wrong = make_run(success=True), make_run(success=False)
    live = make_run(status="running")
    assert [r.pk for r in auth_client.get(URL, {"status": "succeeded"}).context["runs"]] == [right.pk]
    assert [r.pk for r in auth_client.get(URL, {"status": "failed"}).context["runs"]] == [wrong.pk]
    assert live.pk not in [r.pk for r in auth_client.get(URL, {"status": "finished"}).context["runs"]]


def test_the_status_filter_offers_finished_not_succeeded(auth_client):
    body = auth_client.get(URL).content.decode()
    assert '<option value="finished">' in body and '<option value="succeeded"' not in body


def test_html_in_every_field_of_a_row_and_its_search_hit_is_inert(auth_client, make_run):
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    run = make_run(task=None, prompt=evil, model_name=evil, provider="openai", stopped_by="<b>x</b>", first_anchor_break=0,
                   anchor_reason=evil, intervention_detectors=[evil], intervention_tiers=[evil], tags=[evil],
                   session_id=evil)
    record_step(run.pk, StepRecord(index=0, kind="thought", text=f"payload {evil}"))
    for params in ({}, {"q": "payload"}):
        body = auth_client.get(URL, params).content.decode()
        assert f'id="run-{run.pk}"' in body, params
        assert "<script>alert" not in body and "<img src=x" not in body and "<b>x</b>" not in body, params
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<mark>payload</mark> &lt;script&gt;" in body  # the hit row under it
