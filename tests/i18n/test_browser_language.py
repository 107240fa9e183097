"""The header's language switch in headless Chromium (issue 30): English by default, Chinese once chosen,
and still Chinese at the next log-in from another browser."""

from __future__ import annotations

import os
import shutil

import pytest
from django.core.management import call_command

from tests.chromium import launched

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]


@pytest.fixture
def browser():
    with launched() as chromium:
        yield chromium


def _log_in(page, base: str) -> None:
    page.goto(f"{base}/runs/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    page.wait_for_selector("nav")


def test_switching_to_chinese_in_the_header_is_remembered(live_server, browser):
    call_command("loaddemo", verbosity=0)
    base = live_server.url
    # The browser asks for English (Chromium's default): the interface is English.
    page = browser.new_page(viewport={"width": 1440, "height": 900}, locale="en-US")
    _log_in(page, base)
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("nav").get_by_text("Dashboard", exact=True).is_visible()

    # The switch is a select that submits itself (a CSRF-checked POST to set_language).
    with page.expect_navigation():
        page.select_option("select[name=language]", "zh-hans")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    nav = page.locator("nav")
    assert nav.get_by_text("仪表盘", exact=True).is_visible() and nav.get_by_text("审阅", exact=True).is_visible()
    assert "Dashboard" not in nav.inner_text()
    assert page.url.endswith("/runs/")  # back where the user was
    page.close()

    # Another browser, asking for English: the user's choice wins once they log in.
    other = browser.new_context(locale="en-US").new_page()
    _log_in(other, base)
    assert other.locator("html").get_attribute("lang") == "zh-hans"
    assert other.locator("h1").first.inner_text() == "运行"
    other.goto(f"{base}/dashboard/")
    assert other.locator("h1").first.inner_text() == "仪表盘"


def test_a_browser_asking_for_chinese_gets_it_before_logging_in(live_server, browser):
    page = browser.new_page(locale="zh-CN", extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    page.goto(f"{live_server.url}/accounts/login/")
    assert page.locator("h1").inner_text() == "登录"
    assert page.locator("label[for=id_password]").inner_text() == "密码"
