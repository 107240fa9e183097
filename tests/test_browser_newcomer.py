"""A newcomer's first ten minutes in headless Chromium (issue 30): the icon,
the run list's filters and header, no page wider than a phone, htmx errors
shown where the user acted, the import page and the search box."""

from __future__ import annotations

import pytest

from tests import test_browser_pages

# The signed-in page of a given width, as the other page tests open it.
chromium, open_as = test_browser_pages.chromium, test_browser_pages.open_as

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not __import__("shutil").which("chromium"), reason="Debian chromium is not installed"),
]


def _failed_responses(page) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


# -- item 6: the icon ------------------------------------------------------------


def test_every_page_has_an_icon_and_favicon_ico_answers(live_server, open_as, user):
    page = open_as(user)
    failed = _failed_responses(page)
    page.goto(f"{live_server.url}/runs/")
    icon = page.evaluate("document.querySelector('link[rel=icon]')?.href")
    assert icon, "the page names no icon"
    # What the browser fetches for the tab, and what a client asking /favicon.ico gets.
    for url in (icon, f"{live_server.url}/favicon.ico"):
        answer = page.request.get(url)
        assert answer.status == 200, url
        assert answer.headers["content-type"].startswith("image/"), url
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.evaluate("document.querySelector('link[rel=icon]')?.href") == icon
    assert failed == []
