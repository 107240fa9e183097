"""Evaluations (issue 17): 20 tasks × 4 strategies × 5 reruns with the sim model
finish in <= 2 min with 2 worker processes; the evaluation page renders in <= 300 ms.

Starts the sim server and a Celery worker (--concurrency 2) against a scratch
database and the local Redis, creates the evaluation through the service the
form and `manage.py evaluate` use, and waits for its last run. Baseline in the
same run: the same number of ordinary ReAct runs of the same tasks (what the
evaluation would cost if it were only its runs). Then the evaluation page
(GET, signed in) against the run list filtered to the evaluation.

Wall time follows the machine's load (two cores shared with whatever else
runs); the worker processes' CPU seconds per run, printed beside it, do not.

    .venv/bin/python bench/evaluation.py [TASKS] [RERUNS] [--smoke: 2 tasks, 1 rerun]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import _django

DB = _django.bench_db("agentlab_bench_evaluation")
STRATEGIES = ["no_tools", "one_retrieval", "fixed_workflow", "react"]
PAGE_LOADS = _django.sized(30, 2)


def _wait(qs) -> float:
    from runs.core.models import Run

    while qs.filter(status__in=Run.LIVE_STATUSES).exists():
        time.sleep(0.2)
    return time.time()


def _worker_cpu(queue: str) -> float:
    """CPU seconds used so far by the worker processes of `queue` (the parent
    and its pool; they carry RUN_QUEUE in their environment)."""
    total = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if f"RUN_QUEUE={queue}".encode() not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _worker_ready(timeout: float = 120.0) -> None:
    from runs.launch.tasks import execute_run

    deadline = time.monotonic() + timeout
    while not execute_run.app.control.ping(timeout=1.0):
        if time.monotonic() > deadline:
            raise SystemExit("the worker did not answer")


def _page_times(client, url: str) -> list[float]:
    client.get(url)  # warm
    times = []
    for _ in range(PAGE_LOADS):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, response.status_code
    return times


def main(n_tasks: int, reruns: int) -> None:
    with _django.running_stack(DB, concurrency=2) as queue:
        from django.contrib.auth import get_user_model
        from django.db.models import Count
        from django.test import Client

        from runs.core.models import Policy, Run, Task
        from runs.evaluations.selectors import evaluation_report
        from runs.evaluations.services import EvaluationSpec, evaluation_create
        from runs.launch import services

        user = get_user_model().objects.create_user("bench-eval")
        project = _django.bench_project(user)
        _worker_ready()  # the clock starts when the worker answers, not when it was spawned
        tasks = list(Task.objects.order_by("slug")[:n_tasks])
        policy = Policy.objects.filter(name="default").order_by("-version").first()
        cpu0 = _worker_cpu(queue)
        t0 = time.time()
        evaluation = evaluation_create(owner=None, project=project, spec=EvaluationSpec(
            tasks=tasks, strategies=STRATEGIES, reruns=reruns, max_steps=10, max_tokens=20_000, max_seconds=120,
            policy=policy, seed=1))
        queued = time.time() - t0
        runs = Run.objects.filter(evaluation_entry__evaluation=evaluation)
        elapsed = _wait(runs) - t0
        cpu = _worker_cpu(queue) - cpu0
        total = runs.count()
        statuses = dict(runs.values_list("status").annotate(n=Count("id")))
        print(f"evaluation: {len(tasks)} tasks × {len(STRATEGIES)} strategies × {reruns} reruns = {total} runs; "
              f"queued in {queued:.1f} s, all ended {elapsed:.1f} s after the start (target <= 120 s); {statuses}; "
              f"worker CPU {cpu * 1000 / total:.0f} ms/run; load average {os.getloadavg()[0]:.1f}")

        cpu0 = _worker_cpu(queue)
        t0 = time.time()
        plain = []
        for i in range(total):
            task = tasks[i % len(tasks)]
            spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                                    temperature=0.0, max_steps=10, max_tokens=20_000, seed=i, policy=policy)
            plain += services.runs_launch(owner=None, project=project, spec=spec)
        base = _wait(Run.objects.filter(pk__in=[r.pk for r in plain])) - t0
        print(f"baseline: {total} ordinary ReAct runs of the same tasks ended in {base:.1f} s; "
              f"worker CPU {(_worker_cpu(queue) - cpu0) * 1000 / total:.0f} ms/run")

        report = evaluation_report(evaluation)
        for s in report.strategies:
            print(f"  {s.strategy:15} success {s.success.value:.0%} [{s.success.low:.0%}-{s.success.high:.0%}] "
                  f"steps {s.steps.value:.1f} tokens {s.tokens.value:.0f} pass@{reruns} {s.pass_at.value:.2f}")

        client = Client()
        client.force_login(user)
        page = _page_times(client, evaluation.get_absolute_url())
        runs_list = _page_times(client, f"/runs/?evaluation={evaluation.pk}")
        for name, times in (("evaluation page", page), ("run list (baseline)", runs_list)):
            print(f"{name}: median {statistics.median(times):.0f} ms, "
                  f"P95 {_django.percentile(times, 95):.0f} ms over {PAGE_LOADS} loads"
                  + (" (target <= 300 ms)" if name == "evaluation page" else ""))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else _django.sized(20, 2),
         int(sys.argv[2]) if len(sys.argv) > 2 else _django.sized(5, 1))
