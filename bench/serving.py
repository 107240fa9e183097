"""Serving: gunicorn + Django's Postgres pool (what `make demo` and compose run)
against the baseline, Django's runserver (what they ran before), in the same run.

    .venv/bin/python bench/serving.py [--requests 1000] [--concurrency 16] [--smoke: 40 requests, 4 at a time]

Uses a scratch database (agentlab_bench_serving). Each request is a small
OTLP/JSON trace (3 spans: one new run, finished and analysed) on a fresh TCP
connection. Prints requests/s, p50 / p95 latency, non-200 answers and the most
Postgres connections each server held (pg_stat_activity, by application_name).

Targets (issue 13, item 5): no 5xx; gunicorn never holds more than workers x
threads connections; throughput and p95 no worse than the baseline.

The baseline runs with DB_CONN_MAX_AGE=0 (today's default) and a bounded client
concurrency: with the old CONN_MAX_AGE=60 it keeps a connection per request
thread and, on a shared Postgres (max_connections 100 here), would refuse
everyone else's connections too. Pass --baseline-conn-max-age 60 on a private
Postgres to see that.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import bench_db, bench_project, ensure_database, sized  # noqa: E402

DB_NAME = bench_db("agentlab_bench_serving")
WORKERS, THREADS = 2, 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=sized(1000, 40))
    parser.add_argument("--concurrency", type=int, default=sized(16, 4))
    parser.add_argument("--baseline-conn-max-age", type=int, default=0)
    args = parser.parse_args()

    ensure_database(DB_NAME)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from tests.ops.drill import fire, start_gunicorn, start_runserver
    from tests.servers import stop

    user, _ = get_user_model().objects.get_or_create(username="bench")
    out = io.StringIO()
    project = bench_project(user)
    call_command("apitoken", "create", "--user", user.username, "--project", project.slug, "--name", "bench", stdout=out)
    token = out.getvalue().strip()

    rows = []
    for name, start, env in (
        ("runserver (baseline)", start_runserver, {"DB_CONN_MAX_AGE": str(args.baseline_conn_max_age)}),
        (f"gunicorn {WORKERS}x{THREADS} + pool", start_gunicorn, {}),
    ):
        app_name = f"agentlab-bench-{os.getpid()}-{len(rows)}"
        kwargs = {"workers": WORKERS, "threads": THREADS} if start is start_gunicorn else {}
        proc, port = start(db_name=DB_NAME, application_name=app_name, env=env, **kwargs)
        try:
            fire(port, token, requests=sized(50, 4), concurrency=4, db_name=DB_NAME, application_name=app_name)  # warm up
            result = fire(port, token, requests=args.requests, concurrency=args.concurrency, db_name=DB_NAME,
                          application_name=app_name)
        finally:
            stop(proc)
        rows.append((name, result))

    print(f"\n{args.requests} OTLP requests on fresh connections, {args.concurrency} at a time")
    print(f"{'server':<28}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'non-200':>9}{'max PG conns':>14}")
    for name, r in rows:
        bad = sum(n for status, n in r.statuses.items() if status != 200)
        print(f"{name:<28}{r.requests_per_s:>9.0f}{r.p(0.5):>9.1f}{r.p(0.95):>9.1f}{bad:>9}{r.max_connections:>14}")
    base, ours = rows[0][1], rows[1][1]
    print(f"\ngunicorn / baseline: throughput x{ours.requests_per_s / base.requests_per_s:.2f}, "
          f"p95 x{ours.p(0.95) / base.p(0.95):.2f}; connections held <= {WORKERS * THREADS} (configured): "
          f"{ours.max_connections <= WORKERS * THREADS}")


if __name__ == "__main__":
    main()
