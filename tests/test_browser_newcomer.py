"""A newcomer's first ten minutes in headless Chromium (issue 30): the icon,
the run list's filters and header, no page wider than a phone, htmx errors
shown where the user acted, the import page and the search box."""

from __future__ import annotations

import pytest

from tests import test_browser_pages
from tests.test_browser_pages import page_width, shoot

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


# -- item 7: the run list's filters, the header ---------------------------------

# Each visible control of the filter form: its accessible name and, for a select,
# the text it shows when nothing is chosen.
FILTER_CONTROLS = """() => [...document.querySelectorAll('form.filters input, form.filters select')]
  .filter(el => el.type !== 'hidden' && el.offsetParent !== null)
  .map(el => ({name: el.name, label: el.getAttribute('aria-label') ||
                [...el.labels].map(l => l.textContent.trim()).join(' '),
               shown: el.tagName === 'SELECT' ? el.options[el.selectedIndex].text : null}))"""


def test_every_run_list_filter_says_what_it_filters(live_server, open_as, make_run, user):
    make_run()
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/")
    controls = page.evaluate(FILTER_CONTROLS)
    assert len(controls) > 15
    for control in controls:
        assert control["label"].strip(), control
    shown = [c["shown"] for c in controls if c["shown"] is not None]
    # A select showing a bare "any" does not say which filter it is.
    assert all(len(text.split()) >= 2 for text in shown), shown
    assert len(set(shown)) == len(shown), shown
    labels = [c["label"] for c in controls]
    assert len(set(labels)) == len(labels), labels


def _header_height(page) -> float:
    return page.evaluate("document.querySelector('header.topbar').getBoundingClientRect().height")


def test_the_header_is_one_line_wide_and_a_menu_on_a_phone(live_server, open_as, user):
    page = open_as(user, 1440)  # alice is an admin: every link
    page.goto(f"{live_server.url}/runs/")
    assert _header_height(page) < 60
    shoot(page, "header-1440")

    phone = open_as(user, 390)
    phone.goto(f"{live_server.url}/runs/")
    assert _header_height(phone) < 60
    assert not phone.is_visible("header.topbar nav a[href='/dashboard/']")
    toggle = phone.locator("header.topbar button.menu-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    for link in phone.locator("header.topbar nav a").all():
        assert link.is_visible()
    assert phone.is_visible("header.topbar .logout")
    assert page_width(phone) <= 390
    shoot(phone, "header-390-open")
    toggle.click()
    assert not phone.is_visible("header.topbar nav a[href='/dashboard/']")
