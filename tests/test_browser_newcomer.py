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


# -- item 8: no page wider than a phone ------------------------------------------

PHONE = 390
# Full pages of the access matrix that are not a page: downloads and JSON.
NOT_PAGES = {"runs:export", "runs:call_json", "runs:import_sample", "reviews:export_csv", "reviews:export_jsonl",
             "tracing:openapi", "breaks:export_csv", "breaks:export_jsonl", "healthz", "metrics", "favicon"}


def _walked_pages(world) -> list[tuple[str, str]]:
    """(name, path) of every page of the access matrix (tests/test_access.py, which
    covers every URL pattern): the GETs a browser makes, answered 200."""
    from django.urls import reverse

    from tests.test_access import CASES, _world_query

    pages = []
    for case in CASES:
        if case.method != "get" or case.headers or case.ok != 200 or case.kind == "api" or case.name in NOT_PAGES:
            continue
        if case.query.get("export"):
            continue
        url = reverse(case.name, args=[getattr(getattr(world, a), "pk", getattr(world, a)) for a in case.kwargs])
        query = _world_query(world, case.query)
        pages.append((case.id, url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")))
    return pages


def _evaluation_with_figures(world, task) -> int:
    """An evaluation whose report has every column filled, over two strategies."""
    from django.utils import timezone

    from runs.core.models import Run
    from runs.evaluations.models import EvaluationRun
    from runs.evaluations.services import EvaluationSpec, evaluation_create

    spec = EvaluationSpec(tasks=[task], strategies=["one_retrieval", "react_off"], reruns=3, seed=3)
    evaluation = evaluation_create(owner=world.actors["owner"], project=world.project, spec=spec)
    now = timezone.now()
    for i, link in enumerate(EvaluationRun.objects.filter(evaluation=evaluation)):
        Run.objects.filter(pk=link.run_id).update(
            status="finished", success=i % 2 == 0, step_count=3 + i, prompt_tokens=900 + 37 * i,
            completion_tokens=40, started_at=now - timezone.timedelta(seconds=1 + i / 3), finished_at=now)
    return evaluation.pk


def _open_panels(page, name: str) -> None:
    """Open what a page opens in place: the model call and its replay form, a review or failure pane."""
    if name == "runs:detail":
        page.click("details.model-call summary")
        page.wait_for_selector(".model-call-panel")
        page.click(".model-call-panel button:has-text('Replay this call')")
        page.wait_for_selector(".replay-form")
    elif name in ("reviews:queue", "failures:queue"):
        page.click(".review-row")
        page.wait_for_selector("#review-pane .item-head")


# The elements that stick out first (their parent does not), to say what to fix.
STICKING_OUT = """(width) => [...document.querySelectorAll('body *')].filter(el => {
  const right = el.getBoundingClientRect().right, parent = el.parentElement.getBoundingClientRect().right;
  return right > width + 1 && parent <= width + 1;
}).slice(0, 4).map(el => el.tagName.toLowerCase() + (el.className ? '.' + [...el.classList].join('.') : ''))"""


def test_no_page_is_wider_than_a_phone(live_server, open_as, make_run, user, project, task, monkeypatch):
    from tests.test_access import World

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda *a, **kw: None)
    world = World(make_run, user, project)
    pages = [*_walked_pages(world), ("evaluations:detail-figures",
                                     f"/evaluations/{_evaluation_with_figures(world, task)}/")]
    assert len(pages) > 25
    page = open_as(world.actors["admin"], PHONE)  # an admin reaches every page
    wide = []
    for name, path in pages:
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, (name, path)
        _open_panels(page, name.split("-")[0])
        if page_width(page) > PHONE:
            shoot(page, f"wide-{name}")
            wide.append((name, path, page_width(page), page.evaluate(STICKING_OUT, PHONE)))
    assert wide == [], "\n".join(map(str, wide))
    assert not page.js_errors


# -- item 9: an htmx request refused says why, where the user acted ---------------


@pytest.fixture
def pending_approval(make_run):
    from datetime import timedelta

    from django.utils import timezone

    from runs.approvals.models import Approval

    run = make_run(steps=3, status="awaiting")
    return Approval.objects.create(run=run, step_index=3, tool="send_message", args={"text": "hi"},
                                   expires_at=timezone.now() + timedelta(hours=1))


def test_deny_without_a_reason_says_why_in_the_approval_form(live_server, open_as, user, pending_approval):
    page = open_as(user, PHONE)
    page.goto(f"{live_server.url}/approvals/")
    form = page.locator(f"#approval-{pending_approval.pk} form.approval-form")
    with page.expect_response(lambda r: "/decide" in r.url) as answer:
        form.locator("button[value=denied]").click()
    assert answer.value.status == 400
    alert = form.locator("[role=alert]")
    alert.wait_for()
    assert "Say why the call is denied" in alert.inner_text()
    assert alert.is_visible()
    shoot(page, "approval-deny-empty-390")
    # Nothing was decided.
    pending_approval.refresh_from_db()
    assert pending_approval.status == "pending"


def test_any_refused_htmx_request_shows_its_text_not_its_markup(live_server, open_as, user, pending_approval):
    page = open_as(user)
    page.goto(f"{live_server.url}/approvals/")
    page.route("**/decide/", lambda route: route.fulfill(
        status=409, content_type="text/html; charset=utf-8",
        body="<html><body><header>menu</header><main><p class='errors'>Already decided by <b>rita</b>"
             "<img src=x onerror='window.__pwned=1'></p></main></body></html>"))
    form = page.locator("form.approval-form")
    form.locator("button[value=approved]").click()
    alert = form.locator(".htmx-error")
    alert.wait_for()
    assert alert.inner_text() == "Already decided by rita"
    assert form.locator(".htmx-error b, .htmx-error img").count() == 0
    assert page.evaluate("window.__pwned") is None
    # Unreachable: said as such, in the same place (one message, not two).
    page.unroute("**/decide/")
    page.route("**/decide/", lambda route: route.abort())
    form.locator("button[value=approved]").click()
    page.wait_for_function("document.querySelector('.htmx-error').textContent.includes('could not be reached')")
    assert form.locator(".htmx-error").count() == 1


# -- item 12: the import page ------------------------------------------------------


def test_an_import_shows_its_result_under_the_form_on_a_phone(live_server, open_as, user, tmp_path):
    page = open_as(user, PHONE)
    page.goto(f"{live_server.url}/runs/import/")
    sample = tmp_path / "sample.jsonl"
    sample.write_bytes(page.request.get(f"{live_server.url}/runs/import/sample.jsonl").body())
    page.set_input_files("input[type=file]", str(sample))
    page.click("form.stacked button[type=submit]")
    page.wait_for_selector(".import-result")
    top = page.evaluate("document.querySelector('.import-result').getBoundingClientRect().top")
    assert top < 900  # on the first screen, not under the whole format section
    statuses = page.locator(".import-result tbody td:nth-child(5)").all_inner_texts()
    assert sorted(statuses) == ["finished", "finished", "stopped (unfinished)"]
    assert page_width(page) <= PHONE
    shoot(page, "import-result-390")


# -- item 13: the search box and filters make short links ----------------------------


def test_searching_and_filtering_put_only_what_was_asked_in_the_url(live_server, open_as, make_run, user):
    make_run(steps=3)
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/")
    page.fill("input[name=q]", "number")
    with page.expect_navigation():
        page.press("input[name=q]", "Enter")
    assert page.url == f"{live_server.url}/runs/?q=number"
    # A filter changed in place (htmx) pushes a URL with it and the search only.
    with page.expect_response(lambda r: "status=finished" in r.url) as answer:
        page.select_option("select[name=status]", "finished")
    assert answer.value.url.endswith("/runs/?q=number&status=finished")
    page.wait_for_function("location.search === '?q=number&status=finished'")
    # The Filter button, as Enter.
    page.fill("input[name=q]", "")
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    assert page.url == f"{live_server.url}/runs/?status=finished"


# -- item 14: Chinese is text, not boxes -------------------------------------------

# Two different characters drawn in the page's font stack: with no CJK font both
# are the same empty box.
GLYPHS_DIFFER = """() => {
  const font = getComputedStyle(document.body).fontFamily;
  const draw = (ch) => {
    const canvas = document.createElement('canvas'); canvas.width = canvas.height = 40;
    const ctx = canvas.getContext('2d'); ctx.font = `32px ${font}`; ctx.fillText(ch, 2, 32);
    return canvas.toDataURL();
  };
  return draw('图') !== draw('书');
}"""


def test_chinese_renders_as_glyphs(live_server, open_as, user):
    page = open_as(user)
    page.goto(f"{live_server.url}/runs/")
    assert page.evaluate(GLYPHS_DIFFER), "no CJK font: run scripts/chromium.sh (installs fonts-noto-cjk)"
