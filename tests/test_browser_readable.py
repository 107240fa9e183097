"""Issue 15 items 2, 6, 7 in headless Chromium: folded payloads, copy, Markdown that stays inert,
the waterfall and span tree, and a live row of the run list updating by itself."""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from runs.core.models import Run, Task
from tests.chromium import launched
from tests.projects import project_of
from tracing.core.formats.otlp import Span
from tracing.core.steps import Step as StepRecord
from tracing.store.ingest.services import otlp_ingest
from tracing.store.models import Step
from tracing.store.recorder import record_step

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Screenshots land here for a person to look at (not compared by the test).
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", "/tmp"))
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]
EVIL = "<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script> [x](javascript:window.__pwned=1)"


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("reader", password="reader-pass-1")


@pytest.fixture
def browser_page(live_server, user):
    with launched() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", "reader")
        page.fill("#id_password", "reader-pass-1")
        page.click("button[type=submit]")
        page.wait_for_load_state()
        yield page, live_server.url
        assert dialogs == []
        assert page.evaluate("window.__pwned") is None


def _run(user, **fields) -> Run:
    task = Task.objects.get_or_create(slug="paris", defaults={"title": "Paris", "prompt": "How warm is Paris?"})[0]
    return Run.objects.create(task=task, prompt=task.prompt, owner=user, project=project_of(user),
                              **{"status": "finished", **fields})


def test_payloads_fold_unfold_copy_and_stay_inert(browser_page, user):
    page, url = browser_page
    run = _run(user)
    result = {"results": [{"title": f"Doc {i}", "snippet": f"snippet {i}", "score": i / 10} for i in range(6)]}
    now = timezone.now()
    steps = [
        StepRecord(index=0, kind="thought", text="I will **search** first:\n\n- the `weather` tool\n- then "
                   "[the docs](https://example.org)\n\n" + EVIL + "\n\n" + "More reasoning. " * 60,
                   prompt_tokens=120, completion_tokens=30, latency_ms=850),
        StepRecord(index=1, kind="action", text="search", tool="search",
                   args={"query": "weather in Paris today " + "x" * 90, "filters": {"lang": "en"}, "k": 5}),
        StepRecord(index=2, kind="observation", text=json.dumps(result), tool="search", meta={"status": "ok"},
                   latency_ms=240),
        StepRecord(index=3, kind="final", text="**21 C** and sunny. " + EVIL, prompt_tokens=200,
                   completion_tokens=10, latency_ms=400),
    ]
    for s in steps:
        record_step(run.pk, s)
    for i in range(4):  # as a live run writes them: each when its call returned
        Step.objects.filter(run=run, index=i).update(created_at=now + timedelta(milliseconds=300 * (i + 1) ** 2))
    page.goto(f"{url}/runs/{run.pk}/")
    thought = page.locator("#step-0 .md")
    assert thought.locator("strong").inner_text() == "search"
    assert thought.locator("a[href='https://example.org']").get_attribute("rel") == "noopener noreferrer"
    assert thought.locator("img, script").count() == 0
    # Long text is clamped; "show all" opens it and "fold" closes it again.
    folded = thought.evaluate("e => e.clientHeight")
    assert folded < thought.evaluate("e => e.scrollHeight")
    page.click("#step-0 button.show-all")
    assert thought.evaluate("e => e.clientHeight") > folded
    assert page.locator("#step-0 button.show-all").inner_text() == "fold"
    # The JSON result: pretty-printed, folded to a few lines, unfolded on demand, copied as it is.
    block = page.locator("#step-2 .payload")
    pre = block.locator("pre.json")
    assert pre.evaluate("e => e.scrollHeight > e.clientHeight")
    page.screenshot(path=str(SHOTS / "look-payloads-folded.png"), full_page=True)
    block.locator("button.fold-toggle").click()
    assert "open" in block.get_attribute("class")
    assert pre.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    block.locator("button.copy").click()
    page.wait_for_selector("#step-2 button.copy.copied")
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == result
    assert page.locator("#step-1 .payload pre.json").inner_text().startswith("{\n  \"filters\"")
    page.screenshot(path=str(SHOTS / "look-payloads-open.png"), full_page=True)
    # The waterfall: opened on demand, a bar per call, a click lands on the step.
    page.click("#waterfall-panel > summary")
    page.wait_for_selector(".wf-row")
    assert page.locator(".wf-row").count() == 3
    page.screenshot(path=str(SHOTS / "look-waterfall.png"))
    page.click(".wf-row[data-step='2']")
    assert page.evaluate("location.hash") == "#step-2"
    assert page.locator("#step-2").evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")


def test_span_tree_is_collapsible_and_links_its_steps(browser_page, user):
    page, url = browser_page
    t0 = 1_700_000_000_000_000_000
    call = "llm.output_messages.0.message.tool_calls.0.tool_call."

    def span(n, parent, start, end, name, attrs):
        return Span(trace_id="cd" * 16, span_id=f"{n:016x}", parent_id=f"{parent:016x}" if parent else "",
                    name=name, start_ns=t0 + start * 10**6, end_ns=t0 + end * 10**6, attrs=attrs, status="ok")

    otlp_ingest(owner=user, project_id=project_of(user).pk, analyse=False, spans=[
        span(1, 0, 0, 900, "weather-agent", {"openinference.span.kind": "AGENT", "input.value": "Q?",
                                             "output.value": "21 C"}),
        span(2, 1, 10, 400, "ChatCompletion", {"openinference.span.kind": "LLM",
                                               "llm.output_messages.0.message.role": "assistant",
                                               call + "id": "c1", call + "function.name": "weather",
                                               call + "function.arguments": '{"city": "Paris"}'}),
        span(3, 1, 420, 700, EVIL, {"openinference.span.kind": "TOOL", "tool.name": "weather",
                                    "tool_call.id": "c1", "output.value": "21 C"}),
        span(4, 3, 430, 650, "HTTP GET api.weather", {}),
    ])
    run = Run.objects.get(source="otlp")
    page.goto(f"{url}/runs/{run.pk}/")
    page.click("#spans-panel > summary")
    page.wait_for_selector("ul.span-tree")
    page.screenshot(path=str(SHOTS / "look-span-tree.png"))
    assert page.locator("ul.span-tree .span-name").all_inner_texts()[:2] == ["weather-agent", "ChatCompletion"]
    nested = page.locator("ul.span-tree .span-name", has_text="HTTP GET api.weather")
    assert nested.is_visible()
    page.locator("ul.span-tree summary").first.click(position={"x": 4, "y": 6})  # fold the root: its children go
    assert not nested.is_visible()
    page.locator("ul.span-tree summary").first.click(position={"x": 4, "y": 6})
    step_link = page.locator("a.span-step").nth(1)
    index = step_link.get_attribute("data-step")
    step_link.click()
    assert page.evaluate("location.hash") == f"#step-{index}"


def test_a_live_row_of_the_run_list_updates_by_itself_and_polling_stops(browser_page, user):
    page, url = browser_page
    done = _run(user)
    live = _run(user, status=Run.Status.RUNNING)
    page.goto(f"{url}/runs/")
    assert page.locator(f"#run-{live.pk} .status").inner_text() == "running"
    assert page.locator("#live-runs[hx-get]").count() == 1
    page.screenshot(path=str(SHOTS / "look-live-list-running.png"))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    # What the worker does when the run ends (the list is not reloaded).
    record_step(live.pk, StepRecord(index=0, kind="final", text="21 C"))
    Run.objects.filter(pk=live.pk).update(status=Run.Status.FINISHED, success=True)
    page.wait_for_selector(f"#run-{live.pk} .status-finished", timeout=8_000)
    assert "✓ correct" in page.locator(f"#run-{live.pk}").inner_text()
    assert page.locator(f"#run-{done.pk}").count() == 1
    page.screenshot(path=str(SHOTS / "look-live-list-finished.png"))
    polls = len([u for u in requests if "/runs/live/" in u])
    assert all(f"ids={live.pk}" in u for u in requests if "/runs/live/" in u)
    page.wait_for_timeout(4_500)  # two more intervals: nothing is live, so nothing is asked
    assert len([u for u in requests if "/runs/live/" in u]) == polls
    assert page.locator("#live-runs[hx-get]").count() == 0
