"""Live view latency (issue 2): a step is visible on an open run page within
1.5 s of its commit.

Starts the web server, the sim server and a worker against a scratch database,
opens a run page in headless Chromium while the run is going (the sim thinks
400 ms per call), records when each step row enters the DOM (a
MutationObserver) and compares with the step's commit time in Postgres.

    .venv/bin/python bench/live_latency.py [--smoke: a 4-step run]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import _django

DB = _django.bench_db("agentlab_bench_live")
MAX_STEPS = _django.sized(20, 4)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def main() -> None:
    with _django.running_stack(DB, concurrency=1) as queue:
        measure(queue)


def measure(queue: str) -> None:
    from django.contrib.auth.models import User
    from playwright.sync_api import sync_playwright

    from runs.core.models import Run, Task
    from runs.launch import services
    from tests.servers import free_port, wait_http
    from tracing.store.models import Step

    port = free_port()
    web = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"],
                           cwd=_django.ROOT, env={**os.environ, "DB_NAME": DB, "RUN_QUEUE": queue},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    try:
        wait_http(f"http://127.0.0.1:{port}/accounts/login/")
        task = Task.objects.get(slug="tarn-founder-college-city")
        spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                                temperature=0.5, max_steps=MAX_STEPS, max_tokens=50_000, seed=11,
                                settings={"sim": {"latency_ms": 1000}})
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/accounts/login/")
            page.fill("#id_username", "demo")
            page.fill("#id_password", "demo")
            page.click("button[type=submit]")
            # In a project the signed-in user belongs to: the run page is a member's.
            project = _django.bench_project(User.objects.get(username="demo"))
            [run] = services.runs_launch(owner=None, project=project, spec=spec)
            page.goto(f"http://127.0.0.1:{port}/runs/{run.pk}/")
            page.evaluate("""() => { window.seen = {};
                for (const el of document.querySelectorAll('#timeline .step')) window.seen[el.id] = null;
                new MutationObserver(muts => { for (const m of muts) for (const n of m.addedNodes)
                    if (n.id && n.id.startsWith('step-') && !(n.id in window.seen)) window.seen[n.id] = Date.now(); })
                .observe(document.getElementById('timeline'), {childList: true}); }""")
            while Run.objects.filter(pk=run.pk, status__in=Run.LIVE_STATUSES).exists():
                time.sleep(0.2)
            time.sleep(2.5)
            seen = page.evaluate("window.seen")
            browser.close()
        delays = []
        for step in Step.objects.filter(run=run).order_by("index"):
            shown = seen.get(f"step-{step.index}")
            if shown is not None:
                delays.append(shown / 1000 - step.created_at.timestamp())
        print(f"run {run.pk}: {len(delays)} steps arrived live (of {Step.objects.filter(run=run).count()})")
        print(f"commit -> visible: median {sorted(delays)[len(delays) // 2]:.2f} s, "
              f"p95 {_django.percentile(delays, 95):.2f} s, max {max(delays):.2f} s  (target <= 1.5 s)")
    finally:
        web.terminate()


if __name__ == "__main__":
    main()
