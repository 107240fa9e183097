"""The user's path in headless Chromium: log in, start a run, watch steps stream in."""

from __future__ import annotations

import os
import shutil
import time
import uuid

import pytest
from django.core.management import call_command
from django.db import connection

from runs.core.models import Run
from tests.chromium import launched
from tests.projects import team
from tests.servers import start_sim_server, start_worker, stop
from tracing.store.models import Step

# Playwright's sync API runs an event loop in this thread; the ORM calls the
# test makes between page actions are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium is not installed"),
]


@pytest.fixture
def stack(live_server, settings, transactional_db, django_user_model):
    call_command("loaddemo", verbosity=0)
    sim, sim_url = start_sim_server()
    queue = f"agentlab-test-{uuid.uuid4().hex[:8]}"
    settings.RUN_QUEUE = queue
    worker = start_worker(db_name=connection.settings_dict["NAME"], queue=queue, env={"SIM_BASE_URL": sim_url})
    yield live_server.url
    stop(worker)
    stop(sim)


@pytest.fixture
def page():
    with launched() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        yield page


def test_a_user_starts_a_run_and_watches_its_steps_arrive(stack, page):
    page.goto(f"{stack}/runs/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    page.click("text=New run")
    page.select_option("#id_task", index=1)
    page.select_option("#id_mode", "text")
    page.fill("#id_max_steps", "12")
    page.fill("#id_seed", "5")
    for knob in ("forget", "rephrase", "wrong_premise", "early_finish", "ignore_hint"):
        page.fill(f"#id_sim_{knob}", "0")
    # Record when each step row enters the page, to check the live path.
    page.click("button:has-text('Start')")
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector("#step-0", timeout=20_000)
    page.wait_for_selector(".step.kind-final", timeout=30_000)
    run = Run.objects.get()
    deadline = time.monotonic() + 10
    while run.is_live and time.monotonic() < deadline:
        time.sleep(0.2)
        run.refresh_from_db()
    page.wait_for_selector("#run-header .status-finished", timeout=10_000)
    rows = page.locator("#timeline .step").count()
    assert rows == Step.objects.filter(run=run).count() == run.step_count
    # Every index once, in order.
    ids = page.eval_on_selector_all("#timeline .step", "els => els.map(e => e.id)")
    assert ids == [f"step-{i}" for i in range(rows)]
    # The simulated model is labelled as such on the page.
    assert "simulated" in page.inner_text("#run-header")


def test_a_step_with_markup_is_shown_as_text_in_the_browser(live_server, page, transactional_db, django_user_model):
    from django.contrib.auth import get_user_model

    from agentlab.projects.models import Membership
    from tracing.core.steps import Step as StepRecord
    from tracing.store.recorder import record_step

    eve = get_user_model().objects.create_user("eve", password="pw")
    Membership.objects.create(user=eve, project=team(), role="viewer")
    run = Run.objects.create(project=team(), prompt="x", status="finished")
    record_step(run.pk, StepRecord(index=0, kind="observation", text="<script>window.pwned=1</script><b>bold</b>"))
    page.goto(f"{live_server.url}/accounts/login/?next=/runs/{run.pk}/")
    page.fill("#id_username", "eve")
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("#step-0")
    assert page.evaluate("window.pwned") is None
    assert "<script>window.pwned=1</script><b>bold</b>" in page.inner_text("#step-0")
