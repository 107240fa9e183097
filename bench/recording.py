"""Recording overhead per step in the worker (issue 2): target p95 <= 5 ms, commit included.

The same seeded simulated runs (in-process transport, in-memory corpus, so the
model and tools cost the same both ways) go through the agent loop twice,
interleaved: once with a sink that records nothing, once with the Postgres
recorder (one statement + commit per step). Prints the recorder call's own
latency per step and the loop's wall time per step both ways.

    .venv/bin/python bench/recording.py [--smoke: 3 runs each way]
"""

from __future__ import annotations

import statistics
import time

import _django

DB = _django.bench_db("agentlab_bench_recording")
RUNS = _django.sized(60, 3)


def main() -> None:
    _django.ensure_database(DB)
    from runs.agent.loop import AgentConfig, Budget, run_agent
    from runs.agent.sim_server import sim_client
    from runs.agent.suite import builtin_tasks, load_documents
    from runs.agent.tools import CorpusSearch, default_tools
    from runs.core.models import Run
    from tracing.store.recorder import Recorder

    client = sim_client()
    project = _django.bench_project()
    docs = load_documents()
    tasks = builtin_tasks()
    sink_ms: list[float] = []
    wall = {"null": 0.0, "recorder": 0.0}
    steps = {"null": 0, "recorder": 0}

    def one(task: dict, seed: int, kind: str) -> None:
        recorder = None
        if kind == "recorder":
            run = Run.objects.create(prompt=task["prompt"], status="running", seed=seed, project=project)
            recorder = Recorder(run.pk)

        def sink(step) -> None:
            steps[kind] += 1
            if recorder is not None:
                t0 = time.perf_counter()
                recorder(step)
                sink_ms.append((time.perf_counter() - t0) * 1000)

        config = AgentConfig(mode="tools", seed=seed, budget=Budget(max_steps=10), extra_body={"sim": {}})
        t0 = time.perf_counter()
        run_agent(client=client, config=config, prompt=task["prompt"], tools=default_tools(CorpusSearch(docs)), sink=sink)
        wall[kind] += time.perf_counter() - t0

    for i in range(_django.sized(5, 1)):  # warm up both paths
        one(tasks[i % len(tasks)], i, "null")
        one(tasks[i % len(tasks)], i, "recorder")
    sink_ms.clear()
    wall.update(null=0.0, recorder=0.0)
    steps.update(null=0, recorder=0)
    for i in range(RUNS):
        task = tasks[i % len(tasks)]
        one(task, 100 + i, "null")
        one(task, 100 + i, "recorder")

    per_step_null = wall["null"] / steps["null"] * 1000
    per_step_rec = wall["recorder"] / steps["recorder"] * 1000
    print(f"{RUNS} runs each way, {steps['recorder']} recorded steps")
    print(f"recorder call per step: median {statistics.median(sink_ms):.2f} ms, "
          f"p95 {_django.percentile(sink_ms, 95):.2f} ms, max {max(sink_ms):.2f} ms  (target p95 <= 5 ms)")
    print(f"loop wall per step: {per_step_null:.2f} ms recording nothing, {per_step_rec:.2f} ms recording "
          f"-> overhead {per_step_rec - per_step_null:.2f} ms/step")


if __name__ == "__main__":
    main()
