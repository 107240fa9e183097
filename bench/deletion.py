"""Deletion while people read (issue 28): a retention sweep deletes 1,000,000
steps while the run list is being read.

Target: the run list's p95 during the deletion within 2x of its p95 without
it, measured in the same run (before the sweep, then during it; after it too,
for the record).

Seeds a scratch database with COPY: a project of 10,000 recent runs (10 steps
each) that the run list shows, and 2,000 runs of 500 steps (1,000,000 steps)
created 100 days ago, past the project's retention of 30 days. Then the
retention sweep that beat runs (tracing.store.step_deletion.retention_sweep: steps
STEP_BATCH at a time, each batch its own transaction, then the runs in
batches with what cascades from them) runs in a thread of its own, with a
connection of its own, while this thread reads the run list's first page
through Django's test client, over and over, until the sweep is done.

    .venv/bin/python bench/deletion.py          # seed, then measure
    .venv/bin/python bench/deletion.py --smoke  # 200 + 20 runs, seconds
"""

from __future__ import annotations

import io
import os
import random
import sys
import threading
import time

import _django
import _paths
from dashboard import _RUN_COLUMNS, _copy, _esc, _run_row

DB = _django.bench_db("agentlab_bench_deletion")
N_KEEP = _django.sized(10_000, 200)
KEEP_STEPS = 10
N_OLD = _django.sized(2_000, 20)
OLD_STEPS = _django.sized(500, 100)
KEEP_DAYS = 30
# Run list requests before and after the sweep (during it: as many as fit).
READS = _django.sized(100, 5)
TARGET_RATIO = 2.0
STEP_COLUMNS = "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, created_at, search"


def seed() -> int:
    """The runs and steps; returns the number of steps past the retention."""
    from django.contrib.auth.models import User
    from django.db import connection

    from tracing.core.stepsearch import step_document
    from tracing.store.models import Retention

    project = _django.bench_project(User.objects.create_user("bench", password="bench"))
    Retention.objects.create(project=project, keep_days=KEEP_DAYS)
    rng = random.Random(28)
    runs = io.StringIO()
    for i in range(N_KEEP + N_OLD):
        runs.write(_run_row(i, None, rng, project.pk))
    _copy("runs_run", _RUN_COLUMNS, runs)
    with connection.cursor() as cur:
        cur.execute("SELECT setval('runs_run_id_seq', %s)", [N_KEEP + N_OLD + 1])
        # The list's runs in the last few days, newest first; the old ones past the retention.
        cur.execute("UPDATE runs_run SET created_at = now() - id * interval '10 seconds', step_count = %s "
                    "WHERE id <= %s", [KEEP_STEPS, N_KEEP])
        cur.execute("UPDATE runs_run SET created_at = now() - interval '100 days', step_count = %s WHERE id > %s",
                    [OLD_STEPS, N_KEEP])
    # A few hundred texts, their search documents built once, as the writers build them.
    texts = [" ".join(rng.choice(["search", "report", "revenue", "station", "ticket", "harbour", "ledger", "answer"])
                      for _ in range(rng.randint(8, 40))) for _ in range(300)]
    docs = [step_document(text, "", None) for text in texts]
    kinds = ["thought", "action", "observation"]
    buf = io.StringIO()
    for run in range(1, N_KEEP + N_OLD + 1):
        for j in range(KEEP_STEPS if run <= N_KEEP else OLD_STEPS):
            k = rng.randrange(len(texts))
            buf.write(f"{run}\t{j}\t{kinds[j % 3]}\t{_esc(texts[k])}\t\t\\N\t{{}}\t0\t0\t0\t2026-11-01 00:00:00+00"
                      f"\t{docs[k]}\n")
        if buf.tell() > 50_000_000:
            _copy("tracing_step", STEP_COLUMNS, buf)
            buf = io.StringIO()
    _copy("tracing_step", STEP_COLUMNS, buf)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
    return N_OLD * OLD_STEPS


def _read(client) -> float:
    t = time.perf_counter()
    response = client.get("/runs/")
    assert response.status_code == 200, response.status_code
    return (time.perf_counter() - t) * 1000


def main() -> int:
    _django.ensure_database(DB)
    t0 = time.perf_counter()
    old_steps = seed()
    print(f"seeded {N_KEEP} runs of {KEEP_STEPS} steps and {N_OLD} runs of {OLD_STEPS} steps past the retention "
          f"({old_steps} steps to delete) in {time.perf_counter() - t0:.0f} s")
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from runs.core.models import Run
    from tracing.store.models import DeletionRecord, Step
    from tracing.store.step_deletion import STEP_BATCH, retention_sweep

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    for _ in range(3):
        _read(client)  # warm: templates, the query plans' caches
    before = [_read(client) for _ in range(READS)]

    swept: dict[str, object] = {}

    def sweep() -> None:
        started = time.perf_counter()
        try:
            swept["records"] = retention_sweep()
        finally:
            swept["seconds"] = time.perf_counter() - started
            connection.close()  # the thread's own connection

    print(f"load average before: {os.getloadavg()[0]:.1f}")
    thread = threading.Thread(target=sweep, name="retention-sweep")
    thread.start()
    during = []
    while thread.is_alive():
        during.append(_read(client))
    thread.join()
    after = [_read(client) for _ in range(READS)]
    print(f"load average after: {os.getloadavg()[0]:.1f}")

    records = swept.get("records") or []
    deleted = sum(r.counts.get("Step", 0) for r in records)
    assert deleted == old_steps, f"the sweep deleted {deleted} steps of {old_steps}"
    assert Run.objects.count() == N_KEEP and Step.objects.count() == N_KEEP * KEEP_STEPS
    assert DeletionRecord.objects.count() == len(records)
    seconds = float(swept["seconds"])
    print(f"retention sweep: {deleted} steps of {N_OLD} runs deleted in {seconds:.1f} s "
          f"({deleted / seconds:,.0f} steps/s, batches of {STEP_BATCH}), {len(records)} deletion records")
    print(f"\n{'run list (first page)':24} {'requests':>9} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in (("without (before)", before), ("during the deletion", during), ("without (after)", after)):
        print(f"{name:24} {len(values):>9} {_django.percentile(values, 50):>8.1f} {_django.percentile(values, 95):>8.1f}")
    ratio = _django.percentile(during, 95) / _django.percentile(before, 95)
    ok = ratio <= TARGET_RATIO
    print(f"\np95 during / without: {ratio:.2f}x (target <= {TARGET_RATIO:g}x): {'met' if ok else 'MISSED'}")
    return _paths.exit_code(not ok)


if __name__ == "__main__":
    sys.exit(main())
