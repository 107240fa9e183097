"""Model calls (issue 15): what storing them costs, and how fast they show.

Targets: storing the messages sent adds <= 20% to the database size of a
30-step run (with the prefix sharing; the naive copy per call is printed
beside it); the run page with the model-call panels closed unchanged
(<= 100 ms server time for 300 steps, against the same page without calls);
opening one call <= 50 ms.

    .venv/bin/python bench/model_calls.py [--smoke: 3 runs, 30-step pages]
Seeds a scratch database `agentlab_bench_calls`: the demo suite, 40 simulated
runs of 30 steps recorded as a worker records them (in process), and one
300-step run with a model call per turn.
"""

from __future__ import annotations

import statistics
import time

import _django

DB = _django.bench_db("agentlab_bench_calls")
N_RUNS = _django.sized(40, 3)
PAGE_STEPS = _django.sized(300, 30)
ROUNDS = _django.sized(10, 1)
# 10 model turns of thought + action + observation: a 30-step run.
TURNS = 10
RUN_TABLES = ("runs_run", "tracing_step")
CALL_TABLES = ("tracing_modelcall", "tracing_callmessage")


def sizes(tables: tuple[str, ...]) -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE")
        cur.execute("SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest(%s::text[]) AS t", [list(tables)])
        return int(cur.fetchone()[0])


def thirty_step_runs() -> list[int]:
    from django.contrib.auth.models import User

    from runs.agent.sim_server import sim_client
    from runs.core.models import Task
    from runs.launch import execution, services

    user = User.objects.create_user("bench", password="bench")
    project = _django.bench_project(user)
    # The task whose only search result is empty: a sim that rephrases in circles never finds the answer.
    task = Task.objects.get(slug="tollby-playhouse-seats")
    ids = []
    for i in range(N_RUNS):
        # Rephrasing in circles and ignoring hints, the watchdog off: runs that use their whole step budget.
        spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim",
                                mode="tools" if i % 4 else "text", temperature=0.7, max_steps=TURNS,
                                max_tokens=1_000_000, seed=i,
                                settings={"sim": {"rephrase": 1.0, "ignore_hint": 1.0, "early_finish": 0.0,
                                                  "forget": 0.3, "wrong_premise": 0.0, "latency_ms": 0}})
        run = services.run_create(owner=user, project=project, spec=spec)
        ids.append(execution.run_execute(run_id=run.pk, client=sim_client()).pk)
    return ids


def naive_size(run_ids: list[int]) -> int:
    """Every call's messages and tools as one jsonb each: what storing them without sharing would take."""
    from django.db import connection

    from tracing.store.call_store import call_messages
    from tracing.store.models import ModelCall
    from tracing.store.recorder import clean_json

    with connection.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_naive_calls")
        cur.execute("CREATE TABLE bench_naive_calls (id bigserial PRIMARY KEY, run_id bigint, messages jsonb, "
                    "tools jsonb, params jsonb, response jsonb)")
        for call in ModelCall.objects.filter(run_id__in=run_ids).select_related("tools", "params_ref"):
            cur.execute("INSERT INTO bench_naive_calls (run_id, messages, tools, params, response) "
                        "VALUES (%s, %s::jsonb, %s::jsonb, %s::jsonb, %s::jsonb)",
                        [call.run_id, clean_json(call_messages(call)), clean_json(call.tools.body if call.tools_id
                                                                                    else None),
                         clean_json(call.params), clean_json(call.response)])
    return sizes(("bench_naive_calls",))


def big_runs() -> tuple[int, int]:
    """Two 300-step runs, one with a model call per turn and one without (the baseline page)."""
    from runs.core.models import Run, Task
    from tracing.core.model_calls import ModelCallRecord
    from tracing.core.steps import Step
    from tracing.store.call_store import CallRecorder
    from tracing.store.recorder import record_step

    task = Task.objects.first()
    out = []
    for with_calls in (True, False):
        run = Run.objects.create(task=task, prompt="300 steps", status="finished", provider="openai",
                                 model_name="gpt-4o-mini", project=_django.bench_project())
        recorder = CallRecorder(run.pk)
        messages = [{"role": "system", "content": "You are a research agent. " * 10},
                    {"role": "user", "content": task.prompt}]
        for i in range(PAGE_STEPS):
            kind = ("thought", "action", "observation")[i % 3]
            if kind == "thought" and with_calls:
                recorder(ModelCallRecord(step_index=i, api="chat", messages=list(messages),
                                         params={"model": "gpt-4o-mini", "temperature": 0.7, "max_tokens": 256,
                                                 "tools": [{"type": "function", "function": {"name": "search"}}]},
                                         response={"choices": [{"message": {"role": "assistant",
                                                                            "content": f"thought {i}"}}]},
                                         prompt_tokens=300 + i, completion_tokens=40, latency_ms=400.0))
            record_step(run.pk, Step(index=i, kind=kind, text=f"{kind} {i} " + "lorem ipsum " * 30,
                                     tool="search" if kind != "thought" else None,
                                     args={"query": f"q {i}"} if kind == "action" else None,
                                     meta={"status": "ok"} if kind == "observation" else {},
                                     prompt_tokens=300 + i if kind == "thought" else 0,
                                     completion_tokens=40 if kind == "thought" else 0))
            if kind == "action":
                messages.append({"role": "assistant", "content": f"thought {i - 1}", "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": "search",
                                                                         "arguments": f'{{"query": "q {i}"}}'}}]})
            elif kind == "observation":
                messages.append({"role": "tool", "tool_call_id": f"call_{i - 1}",
                                 "content": f"observation {i} " + "result text " * 160})
        out.append(run.pk)
    return out[0], out[1]


def timed(client, url: str, n: int = 30, **headers) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        response = client.get(url, headers=headers)
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return times


def main() -> None:
    _django.ensure_database(DB)
    from django.core.management import call_command

    call_command("loaddemo", verbosity=0)
    from runs.core.models import Run
    from tracing.store.models import ModelCall

    runs0, calls0, messages0 = sizes(RUN_TABLES), sizes(CALL_TABLES), sizes(("tracing_callmessage",))
    t0 = time.perf_counter()
    ids = thirty_step_runs()
    steps = sorted(Run.objects.filter(pk__in=ids).values_list("step_count", flat=True))
    print(f"{N_RUNS} simulated runs recorded in {time.perf_counter() - t0:.1f} s; steps per run: median "
          f"{statistics.median(steps)}, min {steps[0]}, max {steps[-1]}; "
          f"{ModelCall.objects.filter(run_id__in=ids).count()} model calls")
    runs_bytes, calls_bytes = sizes(RUN_TABLES) - runs0, sizes(CALL_TABLES) - calls0
    message_bytes = sizes(("tracing_callmessage",)) - messages0
    naive = naive_size(ids)
    print(f"runs + steps (before):              {runs_bytes / N_RUNS / 1024:8.1f} KB per run")
    print(f"model calls, shared prefixes:       {calls_bytes / N_RUNS / 1024:8.1f} KB per run "
          f"= +{calls_bytes / runs_bytes:.0%} (target <= 20%)")
    print(f"  of which the messages sent:       {message_bytes / N_RUNS / 1024:8.1f} KB per run "
          f"= +{message_bytes / runs_bytes:.0%} (the rest: one row per call with its raw response)")
    print(f"model calls, naive (one copy each): {naive / N_RUNS / 1024:8.1f} KB per run = +{naive / runs_bytes:.0%}")
    for table in (*RUN_TABLES, *CALL_TABLES):
        print(f"  {table:28} {sizes((table,)) / 1024:8.0f} KB in all")

    from django.contrib.auth.models import User
    from django.test import Client

    with_calls, without = big_runs()
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    last = ModelCall.objects.filter(run_id=with_calls).order_by("-step_index").first()
    cases = {
        "run page, 300 steps, no calls (baseline)": (f"/runs/{without}/", {}),
        "run page, 300 steps, 100 calls closed": (f"/runs/{with_calls}/", {}),
        "open call 1 of 100 (htmx)": (f"/runs/{with_calls}/calls/0/", {"HX-Request": "true"}),
        "open call 100 of 100 (htmx, 200 messages)": (f"/runs/{with_calls}/calls/{last.step_index}/",
                                                      {"HX-Request": "true"}),
        "replay form of call 100": (f"/runs/{with_calls}/calls/{last.step_index}/replay/", {"HX-Request": "true"}),
    }
    print(f"{'case':44} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}   targets: page <= 100, call <= 50")
    times: dict[str, list[float]] = {name: [] for name in cases}
    for url, headers in cases.values():
        timed(client, url, 3, **headers)
    # Interleaved rounds: a busy machine slows every case alike, not one more than another.
    for _ in range(ROUNDS):
        for name, (url, headers) in cases.items():
            times[name] += timed(client, url, 3, **headers)
    for name, t in times.items():
        print(f"{name:44} {statistics.median(t):10.1f} {_django.percentile(t, 95):8.1f} {max(t):8.1f}")


if __name__ == "__main__":
    main()
