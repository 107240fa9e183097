"""End-to-end throughput (issue 2): >= 300 ten-step runs per minute with the
sim model and 2 worker processes, queue to last step committed.

Starts the sim server and a Celery worker (--concurrency 2) against a scratch
database and the local Redis, queues RUNS runs through the same service the
new-run form uses, and waits for the last one.

    .venv/bin/python bench/throughput.py [RUNS] [--smoke: 4 runs]
"""

from __future__ import annotations

import sys
import time

import _django

DB = _django.bench_db("agentlab_bench_throughput")


def main(runs: int) -> None:
    with _django.running_stack(DB, concurrency=2):
        from django.db.models import Count, Max, Min

        from runs.core.models import Run, Task
        from runs.launch import services
        from tracing.store.models import Step

        time.sleep(3)  # let the worker connect before the clock starts
        tasks = list(Task.objects.all())
        t0 = time.time()
        for i in range(runs):
            task = tasks[i % len(tasks)]
            spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                                    temperature=0.7, max_steps=10, max_tokens=50_000, seed=i)
            services.runs_launch(owner=None, project=_django.bench_project(), spec=spec)
        queued = time.time() - t0
        while Run.objects.filter(status__in=Run.LIVE_STATUSES).exists():
            time.sleep(0.2)
        agg = Step.objects.aggregate(first=Min("created_at"), last=Max("created_at"))
        elapsed = agg["last"].timestamp() - t0
        statuses = dict(Run.objects.values_list("status").annotate(n=Count("id")))
        steps = Step.objects.count()
        print(f"{runs} runs queued in {queued:.1f} s; last step committed {elapsed:.1f} s after the first enqueue")
        print(f"throughput: {runs / elapsed * 60:.0f} runs/min  (target >= 300), {steps / elapsed:.0f} steps/s, "
              f"{steps / runs:.1f} steps per run; statuses {statuses}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else _django.sized(300, 4))
