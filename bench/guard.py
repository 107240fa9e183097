"""Guard latency: the step API with the watchdog's decision against the same call without it.

    .venv/bin/python bench/guard.py [--agents 50] [--requests 20] [--lengths 10,1000,10000] [--smoke]

Uses a scratch database (agentlab_bench_guard) and starts the server the way
bench/ingest.py does (its `--serve`: agentlab's WSGI app behind a pooled
HTTP/1.1 server, in its own process). For each run length it makes one
guarded and one unguarded run of that many steps through the API (the guarded
one judged as it is written, in one creation request), clones each
into one run per agent in the database (steps, guard state and run memory), then
has the agents send one step per request at once, in threads, each pausing
about --think seconds between its steps as an agent waits for its model: a
thought / action / observation cycle of new facts, so nothing stops a run.
Unguarded and guarded rounds alternate. Printed: p50 / p95 per request, the p95
the decision adds (guarded p95 - unguarded p95) against the target, at each
length: flat in length is the point.

Target (issue 29): p95 added <= 15 ms at 10, 1,000 and 10,000 steps, 50 guarded
agents at once. `--smoke` (a few agents, short runs) finishes in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("BENCH_DB", "agentlab_bench_guard")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import ingest  # noqa: E402  (its server; BENCH_DB names the scratch database first)
from _django import bench_project, ensure_database, percentile  # noqa: E402

TARGET_ADDED_P95_MS = 15.0
GOAL = "Collect the value of every item in the catalogue"


def step(index: int, agent: int) -> dict:
    """A step of a run that keeps finding new facts (the watchdog has nothing to say)."""
    turn, kind = divmod(index, 3)
    if kind == 0:
        return {"index": index, "kind": "thought", "text": f"Next I look up item {turn} of the catalogue."}
    if kind == 1:
        return {"index": index, "kind": "action", "tool": "lookup", "args": {"item": f"item{turn}-{agent}"},
                "text": f"lookup(item{turn}-{agent})"}
    return {"index": index, "kind": "observation", "tool": "lookup", "meta": {"status": "ok"},
            "text": f"item{turn}-{agent} value {turn * 7 + agent} units, shelf s{turn % 977}, colour c{turn % 89}, "
                    f"catalogue entry e{turn}x{agent}"}


RESETS = [0]


def post(base: str, token: str, path: str, body: dict) -> tuple[float, dict]:
    """ms until the answer, a connection the server's listen queue refused
    (50 agents connecting at once) retried as a client would, within the time."""
    data = json.dumps(body).encode()
    start = time.perf_counter()
    for attempt in range(5):
        req = urllib.request.Request(base + path, data=data, method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as response:
                payload = json.loads(response.read())
            break
        except (ConnectionResetError, urllib.error.URLError):
            RESETS[0] += 1
            if attempt == 4:
                raise
            time.sleep(0.05 * 2**attempt)
    return (time.perf_counter() - start) * 1000, payload


def template(base: str, token: str, length: int, guard: bool) -> int:
    """One run of `length` steps, through the API (the guarded one judged as it is written)."""
    _, created = post(base, token, "/api/runs", {"prompt": GOAL, "model": "bench", "guard": guard, "analyse": False,
                                                 "steps": [step(i, 0) for i in range(length)]})
    return created["runs"][0]["id"]


def clone(run_id: int, copies: int) -> list[int]:
    """Copies of a run with its steps, guard state and run memory: agents at the same length."""
    from django.db import connection

    from runs.core.models import Run

    out = []
    with connection.cursor() as cur:
        for _ in range(copies):
            run = Run.objects.get(pk=run_id)
            run.pk = None
            run.save()
            for table, cols in (
                ("tracing_step", "index, kind, role, text, tool, args, meta, prompt_tokens, completion_tokens, "
                                 "latency_ms, created_at, search"),
                ("tracing_guardstate", "mode, policy, state, last_index, stop, stop_sent_at"),
                ("tracing_guardmemo", "kind, digest, source"),
            ):
                cur.execute(f"INSERT INTO {table} (run_id, {cols}) SELECT %s, {cols} FROM {table} WHERE run_id = %s",
                            [run.pk, run_id])
            out.append(run.pk)
    return out


def measure(base: str, token: str, runs: list[int], start: int, requests: int, think_s: float) -> list[float]:
    """Every agent sends `requests` single-step batches, the agents at once, each
    waiting about `think_s` between its steps (its model and tools); ms per request."""

    def agent(pos: int) -> list[float]:
        times = []
        pace = random.Random(pos)
        time.sleep(pace.uniform(0, think_s))  # agents do not start in step
        for k in range(requests):
            if k:
                time.sleep(pace.uniform(0.5, 1.5) * think_s)
            ms, answer = post(base, token, f"/api/runs/{runs[pos]}/steps", {"steps": [step(start + k, pos)]})
            assert answer["written"] == 1, answer
            assert not isinstance(answer["decision"], dict) or answer["decision"]["tier"] != "stop", answer
            times.append(ms)
        return times

    with ThreadPoolExecutor(len(runs)) as pool:
        return [t for times in pool.map(agent, range(len(runs))) for t in times]


def in_process(runs: dict[bool, list[int]], start: int, requests: int) -> dict[bool, tuple[list[float], list[float]]]:
    """The same service call (tracing.store.ingest.services.run_append) in this process,
    guarded and unguarded interleaved request by request: wall and CPU ms. The
    server's own added time, without HTTP and the other agents' queueing (on a
    shared machine the HTTP figures carry everyone's load)."""
    from django.contrib.auth import get_user_model

    from runs.core.models import Run
    from tracing.core.formats.jsonapi import parse_steps
    from tracing.store.ingest import services

    owner = get_user_model().objects.get(username="bench")
    project_id = Run.objects.get(pk=runs[True][0]).project_id
    out: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    for k in range(requests):
        for guard in (False, True):
            steps = parse_steps([step(start + k, 0)])
            wall, cpu = time.perf_counter(), time.process_time()
            services.run_append(owner=owner, project_id=project_id, run_id=runs[guard][0], steps=steps)
            out[guard][0].append((time.perf_counter() - wall) * 1000)
            out[guard][1].append((time.process_time() - cpu) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="requests per agent per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lengths", default="10,1000,10000")
    parser.add_argument("--threads", type=int, default=8, help="server threads")
    parser.add_argument("--think", type=float, default=1.0,
                        help="seconds an agent spends between two steps (its model call, its tool), jittered "
                             "0.5-1.5x; 0 sends back to back, which measures a saturated server, not the guard")
    parser.add_argument("--port", type=int, default=8732)
    parser.add_argument("--smoke", action="store_true", help="5 agents, lengths 10 and 300, 10 requests")
    args = parser.parse_args()
    if args.smoke:
        args.agents, args.requests, args.rounds, args.lengths = 5, 10, 1, "10,300"
    lengths = [int(n) for n in args.lengths.split(",")]

    ensure_database(ingest.DB_NAME)
    from django.contrib.auth import get_user_model

    from tracing.store.ingest.writes import token_create

    owner = get_user_model().objects.create_user("bench")
    token = token_create(user=owner, project_id=bench_project(owner).pk, name="bench")[1]
    server, base = ingest._start_server(args.port, args.threads)
    print(f"{args.agents} agents at once, {args.requests} single-step requests each per round, {args.rounds} "
          f"round(s) each way, about {args.think:g} s between an agent's steps, server threads {args.threads}")
    try:
        for length in lengths:
            started = time.perf_counter()
            runs = {guard: clone(template(base, token, length, guard), args.agents) for guard in (False, True)}
            setup_s = time.perf_counter() - started
            times: dict[bool, list[float]] = {False: [], True: []}
            at = length
            for _ in range(args.rounds):
                for guard in (False, True):
                    times[guard] += measure(base, token, runs[guard], at, args.requests, args.think)
                at += args.requests
            plain, guarded = times[False], times[True]
            added = percentile(guarded, 95) - percentile(plain, 95)
            verdict = "ok" if added <= TARGET_ADDED_P95_MS else "OVER"
            print(f"length {length:>6}, HTTP, {args.agents} agents: unguarded p50 {percentile(plain, 50):6.1f} ms "
                  f"p95 {percentile(plain, 95):6.1f} ms | guarded p50 {percentile(guarded, 50):6.1f} ms "
                  f"p95 {percentile(guarded, 95):6.1f} ms | p95 added {added:+6.1f} ms "
                  f"(target <= {TARGET_ADDED_P95_MS:g}: {verdict}) [{len(guarded)} requests each, {RESETS[0]} connections "
                  f"retried so far; set-up {setup_s:.0f} s]")
            inner = in_process(runs, at, args.requests * 5)
            (pw, pc), (gw, gc) = inner[False], inner[True]
            print(f"{'':>6}         in process, one agent: unguarded p50 {percentile(pw, 50):5.1f} ms "
                  f"p95 {percentile(pw, 95):5.1f} ms (CPU p50 {percentile(pc, 50):4.1f}) | guarded p50 "
                  f"{percentile(gw, 50):5.1f} ms p95 {percentile(gw, 95):5.1f} ms (CPU p50 {percentile(gc, 50):4.1f})"
                  f" | p95 added {percentile(gw, 95) - percentile(pw, 95):+5.1f} ms, CPU p50 added "
                  f"{percentile(gc, 50) - percentile(pc, 50):+4.1f} ms")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
