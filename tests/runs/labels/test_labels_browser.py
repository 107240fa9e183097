"""The labels form and the search box in headless Chromium: what htmx really does with a 400."""

from __future__ import annotations

from tests import test_browser_pages as browser
from tests.runs.reviews.test_reviews_helpers import grant_reviewer
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

# The page tests' Chromium, signed-in pages, browser marks and transactional database.
chromium = browser.chromium
open_as = browser.open_as
pytestmark = browser.pytestmark


def test_too_many_tags_show_the_error_in_place_and_a_fix_saves(live_server, open_as, make_run, user):
    run = make_run(tags=["keep"])
    page = open_as(grant_reviewer(user))
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.click("text=edit labels")
    page.fill("input[name=tags]", ", ".join(f"t{i}" for i in range(1000)))
    page.click("text=Save labels")
    page.wait_for_selector("#run-labels .errors")
    assert "1000 tags, at most 64 allowed" in page.inner_text("#run-labels")
    page.fill("input[name=tags]", 'exp-a, <script>window.pwned=1</script>')
    page.click("text=Save labels")
    page.wait_for_selector("#run-labels a.edit-labels")
    assert '<script>window.pwned=1</script>' in page.inner_text("#run-labels")
    assert page.evaluate("window.pwned") is None
    assert page.js_errors == []
    run.refresh_from_db()
    assert run.tags == ["exp-a", "<script>window.pwned=1</script>"]


def test_a_search_hit_links_to_its_step(live_server, open_as, make_run, user):
    run = make_run()
    for i in range(30):
        record_step(run.pk, StepRecord(index=i, kind="thought", text="filler words" if i != 25 else "the ferry timetable"))
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/?q=ferry")
    assert page.inner_text("tr.search-hit mark") == "ferry"
    page.click("tr.search-hit a")
    page.wait_for_url(f"**/runs/{run.pk}/#step-25")
    assert page.is_visible("#step-25")

