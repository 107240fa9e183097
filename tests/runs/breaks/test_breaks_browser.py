"""Calibration in headless Chromium (issue 26, "Done when"): a reviewer rejects
one pattern's shown break on 20 run pages with the keyboard; the pattern is
demoted in that project only. The run page's panel and the Breaks page at a
laptop's 1440 px and a phone's 390 px (SCREENSHOTS_DIR=... keeps pictures)."""

from __future__ import annotations

import os
import shutil

import pytest
from django.test import Client

from agentlab.projects.models import Membership, Project, Role
from runs.breaks.models import BreakLabel, PatternState
from tests.chromium import launched
from tests.runs.breaks.breaks_helpers import requery_run
from tests.test_browser_pages import page_width, shoot

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


@pytest.fixture(autouse=True)
def _inline(settings):
    settings.BREAKS_REANALYSE_INLINE = True  # no worker: the re-analysis runs in the request


def test_twenty_rejections_by_keyboard_demote_the_pattern_in_that_project_only(
        live_server, open_as, make_run, member, project, django_user_model):
    rita = member("rita", Role.REVIEWER)
    runs = [requery_run(make_run, then_fails=i % 4 == 0) for i in range(20)]
    other = Project.objects.create(name="Other", slug="other")
    olga = django_user_model.objects.create_user("olga")
    Membership.objects.create(user=olga, project=other, role=Role.REVIEWER)
    theirs = requery_run(make_run, project=other, owner=olga)

    page = open_as(rita)
    for i, run in enumerate(runs):
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        page.wait_for_selector("#break-panel button[data-break-key='4']")
        if i == 0:
            shoot(page, "run-page-break-panel-1440")
        url = f"/breaks/runs/{run.pk}/label/"
        with page.expect_response(lambda r, url=url: r.url.endswith(url)) as response:
            page.keyboard.press("4")
        assert response.value.status == 200
        if i < 19:
            page.wait_for_selector("#break-panel button[data-break-key='4'].current")
    # The 20th verdict crossed the floor: the run was re-analysed in the request.
    page.wait_for_selector("#break-panel .flash")
    assert "is demoted in this project" in page.inner_text("#break-panel")
    assert BreakLabel.objects.filter(verdict="none", reviewer=rita).count() == 20
    assert PatternState.objects.get(project=project, pattern="requery").demoted
    assert not PatternState.objects.filter(project=other, demoted=True).exists()

    page.goto(f"{live_server.url}/breaks/")
    row = page.inner_text("#pattern-requery")
    assert "demoted: precision under the floor" in row and "0.00" in row
    assert "if restored: 20 runs would show it" in row
    # A run that had a later strong break shows it now; the others show none.
    page.goto(f"{live_server.url}/runs/{runs[0].pk}/")
    assert "Is step 8 where it lost its anchor?" in page.inner_text("#break-panel")
    page.goto(f"{live_server.url}/runs/{runs[1].pk}/")
    assert page.locator("#break-panel").count() == 0
    assert "worth a look: asked again for what it had, step 4" in page.inner_text("#run-header")
    assert not page.js_errors

    theirs_page = open_as(olga)
    theirs_page.goto(f"{live_server.url}/runs/{theirs.pk}/")
    assert "Is step 4 where it lost its anchor?" in theirs_page.inner_text("#break-panel")
    theirs_page.goto(f"{live_server.url}/breaks/")
    theirs_row = theirs_page.inner_text("#pattern-requery")
    assert "under the floor" not in theirs_row and "\tshown\t" in theirs_row


@pytest.mark.parametrize("width", [1440, 390])
def test_the_panel_and_the_breaks_page_fit_the_screen(live_server, open_as, make_run, user, width):
    from runs.breaks.services import break_label

    runs = [requery_run(make_run) for _ in range(3)]
    for run in runs[1:]:
        break_label(run=run, reviewer=user, verdict="none", note="the agent checked on purpose; a fine re-read")
    page = open_as(user, width)
    page.goto(f"{live_server.url}/runs/{runs[1].pk}/")
    page.wait_for_selector("#break-panel")
    shoot(page, f"run-page-break-panel-{width}")
    assert page_width(page) <= width
    page.goto(f"{live_server.url}/breaks/")
    shoot(page, f"breaks-page-{width}")
    # The table scrolls inside its box on a phone; the page itself does not.
    assert page_width(page) <= width
    assert not page.js_errors
