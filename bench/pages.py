"""Run page and run list server time (issue 2).

Targets: run page of a 300-step run, median <= 100 ms; run list with 100,000
runs in the table, <= 100 ms for any page (first, deep, filtered).

    .venv/bin/python bench/pages.py [--smoke: 300 runs, a 30-step run, 2 requests per case]
Seeds a scratch database `agentlab_bench_pages` with COPY, then times the views
through Django's test client (server time: no network, no browser).
"""

from __future__ import annotations

import io
import json
import random
import statistics
import time

import _django

# BENCH_DB: another scratch database, so two checkouts can measure side by side.
DB = _django.bench_db("agentlab_bench_pages")
N_RUNS = _django.sized(100_000, 300)
BIG_STEPS = _django.sized(300, 30)
DEEP_ROW = _django.sized(80_000, 200)
REPEAT = _django.sized(30, 2)


def seed() -> tuple[int, int]:
    from django.contrib.auth.models import User
    from django.db import connection

    from runs.core.models import Run, Task
    from tracing.core.anchoring import PATTERNS
    from tracing.core.steps import Step
    from tracing.store.recorder import record_step

    project = _django.bench_project(User.objects.create_user("bench", password="bench"))
    tasks = [Task.objects.create(slug=f"task-{i}", title=f"Task {i}", prompt=f"Question {i}?", gold_answer="x") for i in range(25)]
    rng = random.Random(7)
    statuses = ["finished", "finished", "stopped", "error", "finished", "finished"]
    buf = io.StringIO()
    for i in range(N_RUNS):
        t = rng.choice(tasks)
        created = f"2026-{1 + i * 10 // N_RUNS:02d}-{1 + (i % 27):02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000000:06d}+00"
        status = rng.choice(statuses)
        row = [
            str(t.pk), t.prompt, "\\N", "\\N", "agentlab", "sim", rng.choice(["sim", "gpt-4o-mini", "gemma-3-270m"]), "",
            "0.7", rng.choice(["tools", "text"]), "15", "20000", str(i), "{}", status, "f", "", "", "x",
            rng.choice(["t", "f"]), created, created, created, "", str(rng.randint(3, 60)), "1000", "100", "50.0",
            "0", "{}", "{}", str(rng.randint(1, 9)) if rng.random() < 0.2 else "\\N", "", "{}", "{}", "{}", "{}",
            str(project.pk),
        ]
        if row[31] != "\\N":  # an anchor break: of one of the patterns, in turn
            row[33] = json.dumps({"pattern": PATTERNS[i % len(PATTERNS)]})
        buf.write("\t".join(row) + "\n")
    cols = ("task_id, prompt, group_id, owner_id, source, provider, model_name, base_url, temperature, mode, max_steps, "
            "max_tokens, seed, settings, status, stop_requested, stopped_by, reason, final_answer, success, created_at, "
            "started_at, finished_at, celery_id, step_count, prompt_tokens, completion_tokens, latency_ms, "
            "intervention_count, intervention_detectors, intervention_tiers, first_anchor_break, anchor_reason, "
            "anchor_evidence, context_steps, context_tokens, truncated_steps, project_id")
    with connection.cursor() as cur, cur.connection.cursor().copy(f"COPY runs_run ({cols}) FROM STDIN") as copy:
        copy.write(buf.getvalue())
    with connection.cursor() as cur:
        cur.execute("ANALYZE runs_run")
    big = Run.objects.create(task=tasks[0], prompt=f"{BIG_STEPS} steps", status="finished", project=project)
    kinds = ["thought", "action", "observation"]
    for i in range(BIG_STEPS):
        kind = kinds[i % 3]
        record_step(big.pk, Step(index=i, kind=kind, text=f"{kind} {i} " + "lorem ipsum " * 30,
                                 tool="search" if kind != "thought" else None,
                                 args={"query": f"q {i}"} if kind == "action" else None,
                                 meta={"status": "ok"} if kind == "observation" else {}, prompt_tokens=300 + i))
    # The run page's highlights: an anchor break and scores, as run_analyse stores them.
    from runs.launch.run_analysis import run_analyse

    run_analyse(big.pk, recompute_signals=True)
    Run.objects.filter(pk=big.pk).update(first_anchor_break=BIG_STEPS // 2, anchor_reason="bench: a break half-way down")
    return big.pk, tasks[3].pk


def _dialogue_run() -> int:
    """The longest tau2-bench dialogue of shared/eval, imported (user turns, replies, a 24 KB context)."""
    from runs.imports.services import import_lines

    with (_django.EVAL_DIR / "tau2_retail_telecom" / "runs.jsonl").open(encoding="utf-8") as fh:
        line = max(fh, key=lambda raw: len(json.loads(raw)["steps"]))
    return import_lines([line], project_id=_django.bench_project().pk).run_ids[0]


def timed(client, url: str, n: int = REPEAT) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return times


def paired_cpu(client, url: str, rounds: int) -> dict[str, list[float]]:
    """Python CPU ms per request (this process: the test client runs the view in
    it) with every row rendered, as before the row cache, and with rows from
    it; interleaved, so a busy machine slows both alike."""
    from runs.core import step_rows

    cached = step_rows.rows
    modes = {"before: every row rendered": step_rows.RowCache(max_rows=0), "after: rows from the cache": cached}
    cpu: dict[str, list[float]] = {name: [] for name in modes}
    try:
        for i in range(rounds + 2):
            for name, cache in modes.items():
                step_rows.rows = cache
                t0 = time.process_time()
                assert client.get(url).status_code == 200
                if i >= 2:  # warm-up rounds left out
                    cpu[name].append((time.process_time() - t0) * 1000)
    finally:
        step_rows.rows = cached
    return cpu


def main() -> None:
    _django.ensure_database(DB)
    t0 = time.perf_counter()
    big_id, _ = seed()
    print(f"seeded {N_RUNS} runs + one {BIG_STEPS}-step run in {time.perf_counter() - t0:.1f} s")
    from django.contrib.auth.models import User
    from django.test import Client

    from runs.core.models import Run

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    deep = Run.objects.order_by("-created_at", "-id")[DEEP_ROW]
    cursor = f"{deep.created_at.isoformat()}_{deep.pk}"
    cases = {
        f"run page, {BIG_STEPS} steps": f"/runs/{big_id}/",
        "run list, first page": "/runs/",
        f"run list, page at row {DEEP_ROW:,}": f"/runs/?before={cursor}",
        "run list, status=error": "/runs/?status=error",
        "run list, task filter": "/runs/?task=task-3",
        "run list, model + mode": "/runs/?model=gpt-4o-mini&mode=text",
        # status=failed is an old link: read as finished with outcome wrong.
        "run list, task + status + date range": "/runs/?task=task-5&status=failed&since=2026-03-01&until=2026-06-30",
        "run list, lost anchor": "/runs/?anchor=broken",
        "run list, sorted by steps": "/runs/?sort=-steps",
        "run list, sorted by tokens": "/runs/?sort=tokens",
        "run list, steps-sorted + status": "/runs/?sort=-steps&status=failed",
        "run list, lost anchor: phantom call": "/runs/?anchor=phantom_call",
        "run page, tau2 dialogue + context": f"/runs/{_dialogue_run()}/",
    }
    print(f"{'case':42} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for name, url in cases.items():
        timed(client, url, 3)  # warm
        t = timed(client, url)
        print(f"{name:42} {statistics.median(t):10.1f} {_django.percentile(t, 95):8.1f} {max(t):8.1f}")
    print(f"\nrun page, {BIG_STEPS} steps: Python CPU per request, paired in this run (target median <= 40 ms)")
    print(f"{'mode':42} {'median ms':>10} {'p95 ms':>8}")
    for name, cpu in paired_cpu(client, f"/runs/{big_id}/", REPEAT).items():
        print(f"{name:42} {statistics.median(cpu):10.1f} {_django.percentile(cpu, 95):8.1f}")


if __name__ == "__main__":
    main()
