"""The dashboard read from its per-day rollups against today's query of the
runs, at 50,000 and 250,000 runs in one month, in one sitting (issue 31).

Targets: 250k ÷ 50k <= 1.5×, and <= 300 ms at 250k (the rollups' page).

Seeds a scratch database (BENCH_DB) with two projects by COPY: 50,000 runs
through the rollup trigger (its cost per run is printed), 250,000 in the
other with the trigger off and `manage.py rollups` rebuilding (the
backfill's time is printed). The two projects' pages are timed in turn. The runs are the recorder's summaries of November: 10 tasks and
none, two policies and none, three models, two modes, tags, interventions,
context pressure; no steps (the dashboard reads runs or rollups, never
steps). Each page is timed through Django's test client from the rollups
and, with `serves` patched off, from the runs: the same request, the same
data. Then the trigger's cost on one run's end, with and without it.

    .venv/bin/python bench/dashboard_rollups.py [--smoke: 300 and 1,500 runs]
"""

from __future__ import annotations

import contextlib
import io
import random
import statistics
import time
from unittest import mock

import _django
from dashboard import _copy, _esc

DB = _django.bench_db("agentlab_bench_dashboard_rollups")
SIZES = _django.sized((50_000, 250_000), (300, 1_500))
REPEAT_ROLLUPS = _django.sized(9, 2)
REPEAT_RUNS = _django.sized(3, 1)
RUN_ENDS = _django.sized(300, 20)
TARGET_RATIO, TARGET_MS = 1.5, 300.0
COPY_CHUNK = 500

_COLUMNS = ("id, prompt, source, provider, model_name, base_url, temperature, mode, max_steps, max_tokens, settings, "
            "status, stop_requested, stopped_by, reason, final_answer, success, created_at, started_at, finished_at, "
            "celery_id, step_count, prompt_tokens, completion_tokens, latency_ms, intervention_count, "
            "intervention_detectors, intervention_tiers, first_anchor_break, anchor_reason, anchor_evidence, "
            "context_steps, context_tokens, truncated_steps, project_id, task_id, policy_id, tags, attribution")
_MODELS = [("sim", "sim"), ("openai", "gpt-4o-mini"), ("local", "gemma-3-270m")]
_DETECTORS = ["repetition", "observation", "stagnation", "drift", "budget", "user"]
_LAYERS = ["plan", "parameters", "observation", "synthesis", "termination"]


def _array(values) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _run_row(i: int, rng: random.Random, project_id: int, tasks: list, policies: list) -> str:
    steps = rng.randint(3, 40)
    d = rng.sample(_DETECTORS, k=rng.choice([0, 0, 0, 1, 2]))
    tiers = sorted({rng.choice(["hint", "redirect", "stop"]) for _ in d})
    success = rng.random() < 0.5
    provider, model = rng.choice(_MODELS)
    created = f"2026-11-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:00+00"
    turns = list(range(0, steps, 3))
    tags = rng.sample(["nightly", "ci", "a/b"], k=rng.choice([0, 0, 1, 2]))
    layer = rng.choice(_LAYERS) if not success and rng.random() < 0.8 else None
    return "\t".join([
        str(i + 1), f"q{i}", "agentlab", provider, model, "", "0.7", rng.choice(["tools", "text"]), "30", "20000", "{}",
        "finished", "f", "max_steps" if "budget" in d else "", "", "", "t" if success else "f", created, created,
        created, "", str(steps), str(steps * 300), str(steps * 40), str(steps * 50.0), str(len(d)), _array(d),
        _array(tiers), str(rng.randint(1, steps)) if rng.random() < 0.2 else "\\N", "", "{}", _array(turns),
        _array(300 + 120 * k for k in range(len(turns))),
        _array(j for j in range(2, steps, 3) if rng.random() < 0.05), str(project_id),
        str(rng.choice(tasks)) if rng.random() < 0.9 else "\\N", rng.choice(policies), _esc(_array(tags)),
        _esc(f'{{"layer": "{layer}"}}' if layer else "{}"),
    ]) + "\n"


def seed(project, start: int, end: int, *, trigger: bool) -> float:
    """COPY runs start..end-1 into the project; returns the seconds the COPY
    took (the trigger's work included when on)."""
    from django.db import connection

    from runs.core.models import Policy, Task

    tasks = list(Task.objects.filter(slug__startswith="bench-").values_list("pk", flat=True))
    policies = [str(pk) for pk in Policy.objects.filter(project=project).values_list("pk", flat=True)] + ["\\N"]
    rng = random.Random(start)
    # Through the trigger, runs arrive in many commits as they do when they end
    # (one COPY of 50,000 would pile every update of a day's row into one transaction).
    chunk = COPY_CHUNK if trigger else end - start
    bufs = []
    for first in range(start, end, chunk):
        buf = io.StringIO()
        for i in range(first, min(first + chunk, end)):
            buf.write(_run_row(i, rng, project.pk, tasks, policies))
        bufs.append(buf)
    with connection.cursor() as cur:
        if not trigger:
            cur.execute("ALTER TABLE runs_run DISABLE TRIGGER runs_dayrollup_insert")
        t = time.perf_counter()
        for buf in bufs:
            _copy("runs_run", _COLUMNS, buf)
        took = time.perf_counter() - t
        cur.execute("ALTER TABLE runs_run ENABLE TRIGGER runs_dayrollup_insert")
        cur.execute("SELECT setval('runs_run_id_seq', %s)", [end + 1])
    return took


def settle() -> None:
    """ANALYZE, and the rollup tables compacted: 50,000 runs through the
    trigger in a minute leave 100,000 dead row versions, which autovacuum
    reclaims over the hours those runs take to end."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("VACUUM FULL runs_dayrollup")
        cur.execute("VACUUM FULL runs_daycounts")
        cur.execute("ANALYZE")
        cur.execute("SELECT pg_size_pretty(pg_total_relation_size('runs_dayrollup')), "
                    "pg_size_pretty(pg_total_relation_size('runs_run'))")
        rollups, runs = cur.fetchone()
    print(f"sizes: runs_dayrollup {rollups}, runs_run {runs}")


CASES = {
    "November": "/dashboard/?since=2026-11-01&until=2026-11-30",
    "one model": "/dashboard/?since=2026-11-01&until=2026-11-30&model=sim",
    "one task + mode": "/dashboard/?since=2026-11-01&until=2026-11-30&task=bench-3&mode=text",
    "one policy, one week": "/dashboard/?since=2026-11-08&until=2026-11-14&policy=strict",
    "CSV of a chart": "/dashboard/?since=2026-11-01&until=2026-11-30&export=histogram",
}


def measure(clients: dict[str, object]) -> dict[tuple[str, str, str], float]:
    """Median ms per (case, project, source): the projects' requests round-robin,
    so a change in the machine's load falls on both sizes alike."""
    times: dict[tuple[str, str, str], list[float]] = {}
    for name, url in CASES.items():
        for source, repeat in (("rollups", REPEAT_ROLLUPS), ("runs", REPEAT_RUNS)):
            with mock.patch("runs.dashboard.rollup_figures.serves", return_value=False) if source == "runs" \
                    else contextlib.nullcontext():
                for client in clients.values():
                    client.get(url)  # warm-up
                for _ in range(repeat):
                    for size, client in clients.items():
                        t = time.perf_counter()
                        assert client.get(url).status_code == 200
                        times.setdefault((name, size, source), []).append((time.perf_counter() - t) * 1000)
    return {key: statistics.median(values) for key, values in times.items()}


def run_ends(n: int) -> tuple[float, float]:
    """Median ms of one run's end (running -> finished, one UPDATE committed)
    with the rollup trigger and without it, in turn."""
    from django.db import connection, transaction

    from runs.core.models import Run

    ids = list(Run.objects.order_by("-pk").values_list("pk", flat=True)[:2 * n])
    Run.objects.filter(pk__in=ids).update(status="running")
    times: dict[bool, list[float]] = {True: [], False: []}
    for i, pk in enumerate(ids):
        on = i % 2 == 0
        with connection.cursor() as cur:
            cur.execute(f"ALTER TABLE runs_run {'ENABLE' if on else 'DISABLE'} TRIGGER runs_dayrollup_update")
        t = time.perf_counter()
        with transaction.atomic():
            Run.objects.filter(pk=pk).update(status="finished")
        times[on].append((time.perf_counter() - t) * 1000)
    with connection.cursor() as cur:
        cur.execute("ALTER TABLE runs_run ENABLE TRIGGER runs_dayrollup_update")
    return statistics.median(times[True]), statistics.median(times[False])


def main() -> None:
    _django.ensure_database(DB)
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from agentlab.projects.models import Membership, Project
    from runs.core.models import Policy, Task
    from runs.dashboard.models import DayRollup

    small, large = SIZES
    label = {n: f"{n // 1000}k" if n >= 1000 else str(n) for n in SIZES}
    # One project per size in one database, each with its own user: the two
    # pages are timed in turn, in the same sitting, on the same tables.
    clients, projects = {}, {}
    for n in SIZES:
        user = User.objects.create_user(f"bench{n}", password="bench")
        project = Project.objects.create(slug=f"bench-{n}", name=f"Bench {n}")
        Membership.objects.create(user=user, project=project, role="admin")
        for name in ("strict", "lenient"):
            Policy.objects.create(project=project, name=name, config={})
        clients[label[n]], projects[n] = Client(), project
        clients[label[n]].force_login(user)
    for k in range(10):
        Task.objects.create(slug=f"bench-{k}", title=f"bench {k}", prompt="q")

    took = seed(projects[small], 0, small, trigger=True)
    print(f"seeded {small} runs by COPY through the rollup trigger ({COPY_CHUNK} a commit): {took:.1f} s "
          f"({took / small * 1e6:.0f} µs a run)")
    took = seed(projects[large], small, small + large, trigger=False)
    print(f"seeded {large} runs in another project by COPY without it: {took:.1f} s "
          f"({took / large * 1e6:.0f} µs a run)")
    t = time.perf_counter()
    call_command("rollups", stdout=io.StringIO())
    print(f"manage.py rollups (the backfill) over {small + large} runs: {time.perf_counter() - t:.1f} s; rollup rows "
          + ", ".join(f"{DayRollup.objects.filter(project=projects[n]).count()} at {label[n]} runs" for n in SIZES))
    settle()
    figures = measure(clients)

    print(f"\nmedian ms per request ({REPEAT_ROLLUPS} from the rollups, {REPEAT_RUNS} from the runs, after a warm-up;"
          f" the two sizes in turn)")
    a, b = label[small], label[large]
    print(f"{'case':22} {'rollups ' + a:>12} {'rollups ' + b:>12} {'ratio':>7} | {'runs ' + a:>10} {'runs ' + b:>10} "
          f"{'ratio':>7}")
    worst_ratio, worst_ms = 0.0, 0.0
    for name in CASES:
        rs, rl = figures[(name, a, "rollups")], figures[(name, b, "rollups")]
        ns, nl = figures[(name, a, "runs")], figures[(name, b, "runs")]
        worst_ratio, worst_ms = max(worst_ratio, rl / rs), max(worst_ms, rl)
        print(f"{name:22} {rs:12.1f} {rl:12.1f} {rl / rs:6.2f}× | {ns:10.1f} {nl:10.1f} {nl / ns:6.2f}×")
    print(f"rollups: worst {b} ÷ {a} = {worst_ratio:.2f}× (target <= {TARGET_RATIO}×), "
          f"worst {worst_ms:.0f} ms at {b} (target <= {TARGET_MS:.0f} ms)")

    with_trigger, without = run_ends(RUN_ENDS)
    print(f"one run's end (UPDATE + commit), median of {RUN_ENDS} each, in turn: {with_trigger:.2f} ms with the "
          f"rollup trigger, {without:.2f} ms without")


if __name__ == "__main__":
    main()
