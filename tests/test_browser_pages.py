"""The pages a newcomer meets in their first hour, in headless Chromium at a
laptop's 1440 px and a phone's 390 px (issue 16, items 5-12)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.test import Client

from tests.chromium import launched
from tests.projects import team
from tests.runs.reviews.test_reviews_helpers import interrupted_run

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]


@pytest.fixture
def chromium():
    with launched() as browser:
        yield browser


@pytest.fixture
def open_as(chromium, live_server):
    """open_as(user, width) -> a signed-in page of that width (the session
    cookie of a force_login, so no password is hashed)."""

    def open_page(user, width: int = 1440):
        client = Client()
        client.force_login(user)
        context = chromium.new_context(viewport={"width": width, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                              "url": live_server.url}])
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.js_errors = errors
        return page

    return open_page


def shoot(page, name: str) -> None:
    """SCREENSHOTS_DIR=... keeps a picture of each page a test looked at."""
    if os.environ.get("SCREENSHOTS_DIR"):
        out = Path(os.environ["SCREENSHOTS_DIR"])
        out.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


# -- item 5: "Older runs" / "Older interruptions" ----------------------------


def _click_older(page, link_text: str, tbody: str) -> None:
    before = page.locator(f"{tbody} > tr").count()
    with page.expect_response(lambda r: "before=" in r.url and r.request.headers.get("hx-request") == "true"):
        page.click(f"text={link_text}")
    page.wait_for_function(f"document.querySelectorAll('{tbody} > tr').length > {before}")


def test_older_runs_appends_rows_to_the_run_list(live_server, open_as, make_run, user):
    from runs.launch.views import RUNS_PER_PAGE

    for _ in range(RUNS_PER_PAGE + 7):
        make_run()
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/")
    assert page.locator("#run-rows > tr:not(.more)").count() == RUNS_PER_PAGE
    _click_older(page, "Older runs", "#run-rows")
    rows = page.locator("#run-rows > tr")
    assert rows.count() == RUNS_PER_PAGE + 7  # the "older" row replaced by the next page's rows
    assert page.locator("#run-rows th").count() == 0  # no header row inside the body
    assert page.locator("#run-rows tr.more").count() == 0
    ids = page.eval_on_selector_all("#run-rows > tr td:nth-child(2) a", "as => as.map(a => +a.textContent)")
    assert len(ids) == len(set(ids)) == RUNS_PER_PAGE + 7
    assert page.locator("table.runs thead tr").count() == 1
    assert not page.js_errors


def test_older_interruptions_appends_rows_to_the_review_queue(live_server, open_as, make_run, user):
    from runs.reviews.views import ITEMS_PER_PAGE

    for _ in range(ITEMS_PER_PAGE // 2 + 3):
        interrupted_run(make_run)  # two interruptions each
    total = 2 * (ITEMS_PER_PAGE // 2 + 3)
    page = open_as(user)
    page.goto(f"{live_server.url}/reviews/")
    assert page.locator("#review-rows > tr.review-row").count() == ITEMS_PER_PAGE
    _click_older(page, "Older interruptions", "#review-rows")
    assert page.locator("#review-rows > tr.review-row").count() == total
    assert page.locator("#review-rows th").count() == 0
    assert page.locator("#review-rows tr.more").count() == 0
    assert not page.js_errors


# -- item 6: the dashboard -----------------------------------------------------


def _boxes(page, selector: str) -> list[dict]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.getBoundingClientRect().toJSON())")


def test_the_dashboard_fits_the_window_and_its_charts_say_what_they_show(live_server, open_as, make_run, user,
                                                                          django_user_model):
    from runs.reviews.models import ReviewItem

    for i in range(12):
        make_run(status="finished", success=bool(i % 3), step_count=4 + i,
                 model_name=f"a-rather-long-model-name-{i % 4}", intervention_count=i % 2,
                 intervention_detectors=["repetition"] if i % 2 else [], intervention_tiers=["hint"] if i % 2 else [],
                 context_steps=[0, 2, 4], context_tokens=[100, 180 + i, 260 + i])
    run = make_run(status="stopped", success=False, intervention_count=1, intervention_detectors=["repetition"],
                   intervention_tiers=["stop"])
    ReviewItem.objects.create(run=run, step_index=3, detector="repetition", tier="stop", label="wrongly_killed")
    make_run(status="finished", parent=run, fork_from=3, success=True)  # a fork: not a run of the dashboard
    page = open_as(user, 1440)
    page.goto(f"{live_server.url}/dashboard/")
    page.wait_for_selector("[data-chart='fig-over_time'] .xtick text", timeout=20_000)
    page.wait_for_selector("[data-chart='fig-false_kills'] .bartext", timeout=20_000)
    shoot(page, "dashboard-1440")
    assert page_width(page) <= 1440
    # The group tables sit side by side or one under the other, never on top of each other.
    tables = _boxes(page, ".group-table")
    assert len(tables) == 3
    for i, a in enumerate(tables):
        for b in tables[i + 1:]:
            overlap_x = min(a["right"], b["right"]) - max(a["left"], b["left"])
            overlap_y = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            assert overlap_x <= 0 or overlap_y <= 0, (a, b)
    # The per-day axis shows dates.
    ticks = page.eval_on_selector_all("[data-chart='fig-over_time'] .xtick text", "ts => ts.map(t => t.textContent)")
    assert ticks and all(__import__("re").fullmatch(r"[A-Z][a-z]{2} \d{1,2}", t) for t in ticks), ticks
    # Only charts with bars say "click a bar".
    for figure in page.locator("section.charts figure").all():
        caption = figure.locator("figcaption").inner_text()
        if "click a bar" in caption:
            assert figure.locator(".barlayer .point").count() > 0, caption
    assert "click a bar" not in page.locator("figure:has([data-chart='fig-over_time']) figcaption").inner_text()
    assert "click" not in page.locator("figure:has(a[href$='export=context']) figcaption").inner_text()
    # The false-kill count above a full bar is inside the plot, not cut off at its top.
    label = _boxes(page, "[data-chart='fig-false_kills'] .bartext")[0]
    plot = _boxes(page, "[data-chart='fig-false_kills'] .nsewdrag")[0]
    assert label["top"] >= plot["top"] - 1, (label, plot)
    assert page.locator("[data-chart='fig-false_kills'] .bartext").text_content() == "1/1"
    # The fork is not counted, and no policy is named "—".
    assert page.locator(".kpi").first.inner_text().startswith("13")
    assert "—" not in page.locator("section.groups").inner_text().split()
    page390 = open_as(user, 390)
    page390.goto(f"{live_server.url}/dashboard/")
    page390.wait_for_selector("[data-chart='fig-over_time'] .xtick text", timeout=20_000)
    shoot(page390, "dashboard-390")
    assert page_width(page390) <= 390
    assert not page.js_errors and not page390.js_errors


# -- item 8: the run page and the run list on a phone --------------------------


LONG_TASK = "a-task-slug-as-long-as-the-real-ones-get-2024"


@pytest.mark.parametrize("width", [1440, 390])
def test_the_run_page_and_the_run_list_fit_the_window(live_server, open_as, make_run, user, task, width):
    from tracing.core.steps import Step as StepRecord
    from tracing.store.recorder import record_step

    task.slug = LONG_TASK
    task.save()
    for _ in range(5):
        make_run(steps=3, model_name="gpt-4.1-mini-2025-04-14", intervention_count=1,
                 intervention_detectors=["repetition"], intervention_tiers=["hint"], first_anchor_break=1)
    run = make_run(steps=6, context_steps=[0, 3], context_tokens=[300, 900], first_anchor_break=4,
                   anchor_reason="the thought names a figure no observation contains")
    record_step(run.pk, StepRecord(index=6, kind="action", tool="search",
                                   args={"query": "a_very_long_query_without_spaces_" * 4}))
    page = open_as(user, width)
    for path, name in ((f"/runs/{run.pk}/", "run"), ("/runs/", "list")):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        shoot(page, f"{name}-{width}")
        assert page_width(page) <= width, (path, page_width(page))
        # The menu bar runs the whole width: the page is not wider than it.
        bar = page.locator("header.topbar").bounding_box()
        assert bar["x"] == 0 and bar["width"] == width
    assert not page.js_errors


# -- item 9: New run ----------------------------------------------------------


def test_new_run_shows_what_applies_and_the_local_model_gets_text_mode(live_server, open_as, user, task,
                                                                         monkeypatch):
    from runs.core.models import Run

    sent = []
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda args, **kw: sent.append(args))
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/new/")
    # The simulated model (the default): its knobs, no model name.
    assert page.is_visible("#id_sim_forget") and not page.is_visible("#id_model_name")
    assert page.input_value("#id_mode") == "tools"
    # An OpenAI-compatible endpoint: a model name, no simulated knobs.
    page.select_option("#id_provider", "openai")
    assert page.is_visible("#id_model_name") and not page.is_visible("#id_sim_forget")
    assert page.eval_on_selector("#id_mode option[value=tools]", "o => o.disabled") is False
    # The local model: text mode chosen for it (Tools cannot be picked), neither name nor knobs.
    page.select_option("#id_provider", "local")
    assert page.input_value("#id_mode") == "text"
    assert page.eval_on_selector("#id_mode option[value=tools]", "o => o.disabled") is True
    assert not page.is_visible("#id_model_name") and not page.is_visible("#id_sim_forget")
    shoot(page, "new-run-local-1440")
    page.select_option("#id_task", task.slug)
    page.click("button:has-text('Start')")
    page.wait_for_url("**/runs/*/")
    run = Run.objects.get()
    assert run.provider == "local" and run.mode == "text" and sent == [(run.pk,)]
    assert not page.js_errors


# -- item 11: policies -----------------------------------------------------------


def test_the_policy_editor_is_a_form_with_field_errors(live_server, open_as, user):
    from django.core.management import call_command

    from runs.core.models import Policy
    from runs.policies.services import builtin_policies_load

    call_command("loaddemo", verbosity=0)
    builtin_policies_load(project_id=team().pk)  # alice's project: she is its admin
    page = open_as(user)
    page.goto(f"{live_server.url}/policies/")
    off = page.locator("tr:has(code:text-is('off'))")
    assert "hint" not in off.inner_text() and "signals only" in off.inner_text()
    page.goto(f"{live_server.url}/policies/new/")
    assert page.is_visible("#id_ladder__stop_futile") and page.is_visible("#id_ladder__stop_invalid")
    assert not page.is_visible("#id_config")  # the JSON is the advanced way, folded
    page.fill("#id_name", "patient")
    page.fill("#id_ladder__stop_invalid", "0")
    page.click("button:has-text('Save')")
    error = page.locator("p.field.has-error:has(#id_ladder__stop_invalid) .error")
    assert "must be >= 1" in error.inner_text()
    shoot(page, "policy-error-1440")
    page.fill("#id_ladder__stop_invalid", "7")
    page.click("button:has-text('Save')")
    page.wait_for_url("**/policies/#policy-*")
    assert Policy.objects.get(name="patient").as_policy().ladder.stop_invalid == 7
    narrow = open_as(user, 390)
    for path in ("/policies/", "/policies/default/edit/"):
        narrow.goto(f"{live_server.url}{path}")
        shoot(narrow, "policies-390" if path == "/policies/" else "policy-edit-390")
        assert page_width(narrow) <= 390, path


# -- item 7: what-if ----------------------------------------------------------------


def test_the_trade_off_chart_spreads_its_points_and_shows_its_titles(live_server, open_as, user):
    from django.utils import timezone

    from runs.whatif.models import WhatIfJob
    from tests.runs.whatif.test_whatif import result_row

    values = [6, 8, 10, 12, 14]
    rows = [result_row(v, stopped=s, interrupted=5, justified=(1, 2)) for v, s in zip(values, (3, 4, 2, 1, 1),
                                                                                        strict=True)]
    job = WhatIfJob.objects.create(project=team(), key="k", created_by=user, policies=[{}] * 5,
                                   sweep_path="ladder.stop_streak", sweep_values=values, snapshot_at=timezone.now(), status="done", result=rows,
                                   total_runs=30, done_runs=30, duration_s=0.1)
    for width in (1440, 390):
        page = open_as(user, width)
        page.goto(f"{live_server.url}/whatif/{job.pk}/")
        page.wait_for_selector("[data-chart='fig-curve'] .scatterlayer .point", timeout=20_000)
        shoot(page, f"whatif-{width}")
        chart = "[data-chart='fig-curve']"
        ticks = page.eval_on_selector_all(f"{chart} .xtick text", "ts => ts.map(t => t.textContent)")
        assert ticks == [str(v) for v in values]
        # Each line's points stand apart, one per value, left to right.
        xs = page.eval_on_selector_all(f"{chart} .scatterlayer .trace:first-child .point",
                                       "ps => ps.map(p => p.getBoundingClientRect().x)")
        assert len(xs) == 5 and all(b - a > 20 for a, b in zip(xs, xs[1:], strict=False)), xs
        # The axis titles are whole: inside the chart's box.
        box = page.locator(chart).bounding_box()
        for title in (".g-xtitle", ".g-ytitle"):
            t = page.locator(f"{chart} {title}").bounding_box()
            assert t["x"] >= box["x"] and t["y"] >= box["y"], title
            assert t["x"] + t["width"] <= box["x"] + box["width"] + 1 and t["y"] + t["height"] <= box["y"] + box["height"] + 1
        # The backwards move (8 stops more runs than 6) is explained on the page.
        notes = page.locator(".whatif-notes").inner_text()
        assert "At ladder.stop_streak = 8 the replay stops 4 runs against 3 at 6" in notes
        assert page_width(page) <= width
        assert not page.js_errors
