"""The deletion pages and the sweep banner in headless Chromium at 1440 and 390 px (issue 28)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.core.models import Run
from runs.health.models import SweepMark
from runs.health.sweeps import MARK
from tests import test_browser_pages as browser
from tracing.store.models import DeletionRecord

# The page tests' Chromium, signed-in pages, browser marks and transactional database.
chromium = browser.chromium
open_as = browser.open_as
pytestmark = browser.pytestmark


@pytest.mark.parametrize("width", [1440, 390])
def test_an_admin_deletes_a_run_from_its_page_and_sees_the_record(live_server, open_as, make_run, user, width):
    run = make_run(steps=4, prompt="<script>alert(1)</script> what is it?")
    page = open_as(user, width)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.click("text=delete…")
    assert "<script>alert(1)</script>" in page.inner_text("main")  # the prompt as text
    browser.shoot(page, f"deletion-confirm-{width}")
    assert browser.page_width(page) <= width
    page.click("button:has-text('Delete run')")
    page.wait_for_url(f"{live_server.url}/runs/")
    assert not Run.objects.filter(pk=run.pk).exists() and DeletionRecord.objects.count() == 1
    page.goto(f"{live_server.url}/deletions/")
    assert f"run {run.pk}" in page.inner_text("main")
    browser.shoot(page, f"deletion-records-{width}")
    assert browser.page_width(page) <= width and not page.js_errors


def test_the_run_list_shows_the_stalled_sweep_banner(live_server, open_as, user):
    SweepMark.objects.create(name=MARK, at=timezone.now() - timedelta(seconds=90))
    page = open_as(user, 390)
    page.goto(f"{live_server.url}/runs/")
    assert "The reconciler last swept" in page.inner_text("main")
    browser.shoot(page, "sweep-banner-390")
    assert browser.page_width(page) <= 390 and not page.js_errors
