"""The pages a newcomer meets in their first hour, in headless Chromium at a
laptop's 1440 px and a phone's 390 px (issue 16, items 5-12)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.test import Client

from tests.runs.reviews.test_reviews_helpers import interrupted_run

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]


@pytest.fixture
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


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
