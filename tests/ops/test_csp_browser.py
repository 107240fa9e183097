"""Every page under the Content-Security-Policy, in headless Chromium: no
violation reported, plotly charts drawn, htmx requests still made (issue 13, item 6).

Set SCREENSHOTS_DIR to keep a picture of each page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Run
from tests.chromium import launched

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]

# Collects what the browser refused, before any page script runs.
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def browser_page():
    with launched() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.add_init_script(LISTEN)
        yield page


def _shoot(page, name: str) -> None:
    if os.environ.get("SCREENSHOTS_DIR"):
        Path(os.environ["SCREENSHOTS_DIR"]).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(os.environ["SCREENSHOTS_DIR"]) / f"{name}.png"), full_page=False)


def test_pages_work_under_the_csp(live_server, browser_page):
    call_command("loaddemo", runs=8, verbosity=0)
    page = browser_page
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    htmx_requests: list[str] = []
    page.on("request", lambda r: htmx_requests.append(r.url) if r.headers.get("hx-request") else None)

    response = page.goto(f"{live_server.url}/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    page.wait_for_url("**/runs/")

    run = Run.objects.filter(step_count__gt=3).order_by("pk").first()
    other = Run.objects.filter(task=run.task).exclude(pk=run.pk).order_by("pk").first() or \
        Run.objects.exclude(pk=run.pk).order_by("pk").first()
    pages = {
        "runs": "/runs/",
        "run": f"/runs/{run.pk}/",
        "new": "/runs/new/",
        "import": "/runs/import/",
        "dashboard": "/dashboard/",
        "compare": f"/compare/?runs={run.pk},{other.pk}",
        "diff": f"/compare/diff/?a={run.pk}&b={other.pk}",
        "reviews": "/reviews/",
        "whatif": "/whatif/",
        "policies": "/policies/",
        "tokens": "/settings/tokens/",
    }
    for name, path in pages.items():
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        assert response.headers["content-security-policy"], path
        page.wait_for_load_state("networkidle")
        if name in ("dashboard", "compare"):
            # plotly.min.js loaded and drew: an SVG inside each chart box.
            page.wait_for_selector(".chart .main-svg", timeout=20_000)
        _shoot(page, name)
        assert page.evaluate("window.__csp") == [], (path, page.evaluate("window.__csp"))

    # htmx under the policy: the run list filters refresh the table in place.
    page.goto(f"{live_server.url}/runs/")
    before = len(htmx_requests)
    page.select_option("select[name=status]", "finished")
    page.wait_for_function("() => location.search.includes('status=finished')")
    assert len(htmx_requests) > before
    assert page.evaluate("window.__csp") == []
    # The review queue loads an item into its pane on a click (htmx.ajax in review.js).
    page.goto(f"{live_server.url}/reviews/")
    page.click(".review-row")
    page.wait_for_selector("#review-pane .item-head", timeout=10_000)
    _shoot(page, "review-item")
    assert page.evaluate("window.__csp") == []
    # The compare grid still gets its width (set by compare.js, no inline style).
    page.goto(f"{live_server.url}/compare/?runs={run.pk},{other.pk}")
    assert page.evaluate("document.querySelector('table.cmp-grid').style.width").endswith("rem")
    assert not [e for e in console_errors if "Content Security Policy" in e], console_errors
