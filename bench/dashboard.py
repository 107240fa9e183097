"""Dashboard and what-if (issue 7).

Targets: the dashboard over 50,000 runs and 1,000,000 steps <= 500 ms server
time; a what-if replay over 10,000 runs <= 20 s.

Seeds a scratch database with COPY: 50,000 runs (summaries as the recorder
keeps them) and 1,000,000 steps; 10,000 of the runs carry real steps from
shared/eval (the trajectories repeated) so the replay runs the detectors on
real text. Then times the dashboard through Django's test client and a
what-if sweep through the same service the worker runs.

    .venv/bin/python bench/dashboard.py [--smoke: 300 runs, 3,000 steps]
"""

from __future__ import annotations

import io
import json
import random
import statistics
import time

import _django

DB = _django.bench_db("agentlab_bench_dashboard")
N_RUNS = _django.sized(50_000, 300)
N_STEPS = _django.sized(1_000_000, 3_000)
N_REAL = _django.sized(10_000, 100)
REPEAT = _django.sized(10, 2)


def _copy(table: str, cols: str, buf: io.StringIO) -> None:
    from django.db import connection

    with connection.cursor() as cur, cur.connection.cursor().copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
        copy.write(buf.getvalue())


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r").replace("\x00", "")


_RUN_COLUMNS = ("id, prompt, source, provider, model_name, base_url, temperature, mode, max_steps, max_tokens, "
                "settings, status, stop_requested, stopped_by, reason, final_answer, success, created_at, started_at, "
                "finished_at, celery_id, step_count, prompt_tokens, completion_tokens, latency_ms, intervention_count, "
                "intervention_detectors, intervention_tiers, first_anchor_break, anchor_reason, anchor_evidence, "
                "context_steps, context_tokens, truncated_steps, project_id")
_DETECTORS = ["repetition", "observation", "stagnation", "drift", "budget", "user"]


def _run_row(i: int, traj, rng: random.Random, project_id: int) -> str:
    """Run i's summary row as the recorder keeps it (a real trajectory's for the first N_REAL)."""
    real = traj is not None
    steps = len(traj.steps) if real else rng.randint(3, 40)
    d = rng.sample(_DETECTORS, k=rng.choice([0, 0, 0, 1, 2]))
    tiers = sorted({rng.choice(["hint", "redirect", "stop"]) for _ in d})
    success = (traj.success if real else rng.random() < 0.5)
    day = 1 + (i % 28)
    created = f"2026-11-{day:02d} {i % 24:02d}:{i % 60:02d}:00+00"
    return "\t".join([
        str(i + 1), _esc(traj.task[:2000]) if real else f"q{i}", "import" if real else "agentlab", "sim",
        rng.choice(["sim", "gpt-4o-mini", "gemma-3-270m"]), "", "0.7", rng.choice(["tools", "text"]), "30",
        "20000", "{}", "finished", "f", "max_steps" if "budget" in d else "", "", "", "t" if success else "f",
        created, created, created, "", str(steps), str(steps * 300), str(steps * 40), str(steps * 50.0),
        str(len(d)), "{" + ",".join(d) + "}", "{" + ",".join(tiers) + "}",
        str(rng.randint(1, steps)) if rng.random() < 0.2 else "\\N", "", "{}",
        "{" + ",".join(str(j) for j in range(0, steps, 3)) + "}",
        "{" + ",".join(str(300 + 120 * k) for k in range(len(range(0, steps, 3)))) + "}",
        "{" + ",".join(str(j) for j in range(2, steps, 3) if rng.random() < 0.05) + "}", str(project_id),
    ]) + "\n"


def _seed_steps(trajectories: list) -> int:
    written = 0
    buf = io.StringIO()
    for i in range(N_RUNS):
        if written >= N_STEPS:
            break
        if i < N_REAL:
            steps = trajectories[i % len(trajectories)].steps
            rows = [(s.index, s.kind, s.text, s.tool or "", json.dumps(s.args) if s.args is not None else "\\N")
                    for s in steps]
        else:
            rows = [(j, "observation", "filler", "search", "\\N") for j in range(min(40, N_STEPS - written))]
        for index, kind, text, tool, args in rows:
            buf.write(f"{i + 1}\t{index}\t{kind}\t{_esc(text[:4000])}\t{_esc(tool)}\t{_esc(args) if args != chr(92) + 'N' else args}\t{{}}\t0\t0\t0\t2026-11-01 00:00:00+00\n")
            written += 1
        if buf.tell() > 50_000_000:
            _copy("tracing_step", "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, "
                  "latency_ms, created_at", buf)
            buf = io.StringIO()
    _copy("tracing_step", "run_id, index, kind, text, tool, args, meta, prompt_tokens, completion_tokens, latency_ms, "
          "created_at", buf)
    return written


def seed() -> None:
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from tracing.core.steps import read_jsonl

    call_command("loaddemo", verbosity=0)
    project = _django.bench_project(User.objects.create_user("bench", password="bench"))
    trajectories = [t for path in sorted(_django.EVAL_DIR.glob("*/runs.jsonl")) for t in read_jsonl(path)]
    rng = random.Random(3)
    runs = io.StringIO()
    for i in range(N_RUNS):
        runs.write(_run_row(i, trajectories[i % len(trajectories)] if i < N_REAL else None, rng, project.pk))
    _copy("runs_run", _RUN_COLUMNS, runs)
    with connection.cursor() as cur:
        cur.execute("SELECT setval('runs_run_id_seq', %s)", [N_RUNS + 1])
    written = _seed_steps(trajectories)
    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    print(f"seeded {N_RUNS} runs, {written} steps ({N_REAL} runs with real trajectories)")


def main() -> None:
    _django.ensure_database(DB)
    t0 = time.perf_counter()
    seed()
    print(f"seed took {time.perf_counter() - t0:.0f} s")
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    cases = {
        "dashboard, November": "/dashboard/?since=2026-11-01&until=2026-11-30",
        "dashboard, one model": "/dashboard/?since=2026-11-01&until=2026-11-30&model=sim",
        "dashboard, one task + mode": "/dashboard/?since=2026-11-01&until=2026-11-30&task=salt-lantern-birthplace&mode=text",
        "dashboard, CSV of a chart": "/dashboard/?since=2026-11-01&until=2026-11-30&export=histogram",
    }
    print(f"{'case':34} {'median ms':>10} {'p95 ms':>8}")
    for name, url in cases.items():
        client.get(url)
        times = []
        for _ in range(REPEAT):
            t = time.perf_counter()
            assert client.get(url).status_code == 200
            times.append((time.perf_counter() - t) * 1000)
        print(f"{name:34} {statistics.median(times):10.1f} {_django.percentile(times, 95):8.1f}")

    from unittest import mock

    from runs.whatif.services import whatif_create
    from runs.whatif.sweep_job import whatif_execute

    user = User.objects.get(username="bench")
    with mock.patch("runs.whatif.tasks.execute_whatif.apply_async"):
        job = whatif_create(user=user, project_id=_django.bench_project(user).pk, config={}, sweep_path="ladder.stop_streak", sweep_values=[10],
                            filters={"source": "import"})
    t = time.perf_counter()
    job = whatif_execute(job.pk)
    print(f"what-if, 1 policy over {job.total_runs} runs: {time.perf_counter() - t:.1f} s  (target <= 20 s) "
          f"status {job.status} {job.error}")
    with mock.patch("runs.whatif.tasks.execute_whatif.apply_async"):
        job = whatif_create(user=user, project_id=_django.bench_project(user).pk, config={}, sweep_path="ladder.stop_streak", sweep_values=[6, 10, 14],
                            filters={"source": "import"})
    t = time.perf_counter()
    job = whatif_execute(job.pk)
    print(f"what-if, sweep of 3 values over {job.total_runs} runs: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
