"""Ingestion speed: the JSON step API and OTLP/HTTP vs raw COPY, through a real HTTP server.

    .venv/bin/python bench/ingest.py [--rounds 3] [--concurrency 2]

Uses a scratch database (agentlab_bench_ingest), starts `manage.py runserver`
on it (a real threaded HTTP server in its own process), and feeds it every
trajectory of ../shared/eval over HTTP:

* JSON API, bulk: `POST /api/runs` with `{"runs": [...]}` of about BATCH_STEPS
  steps per request, each run with its steps and outcome (analysis deferred:
  `"analyse": false`, see below); bodies are serialised before the clock starts;
* raw COPY, the baseline: the same rows COPYed into tracing_step by psycopg in
  this process, into runs created beforehand, in the same round;
* OTLP protobuf: the same trajectories as OpenInference spans (an AGENT root, an
  LLM span per thought / final, a TOOL span per action + observation), 512 spans
  per request (the SDK's default batch);
* request latency for batches of 1, 100 and 1000 steps appended to a live run
  (`POST /api/runs/{id}/steps`).

Targets (issue 8): JSON API >= 20,000 steps/s and >= 0.3 of raw COPY; OTLP
>= 5,000 spans/s. Per-run analysis (signals + anchor break) is not in the
ingestion figure: it runs when a run is finished with `"analyse": true`; its
cost is measured and printed separately.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import EVAL_DIR, ROOT, bench_project, ensure_database, percentile  # noqa: E402

DB_NAME = "agentlab_bench_ingest"
BATCH_STEPS = 5000
OTLP_BATCH_SPANS = 512
TARGET_STEPS_PER_S = 20_000
TARGET_COPY_RATIO = 0.3
TARGET_SPANS_PER_S = 5_000
LATENCY_SIZES = {1: 300, 100: 60, 1000: 20}  # batch size -> requests


def _load():
    from tracing.steps import read_jsonl

    trajectories = []
    for path in sorted(EVAL_DIR.glob("*/runs.jsonl")):
        trajectories.extend(read_jsonl(path))
    return trajectories


def _step_dict(step) -> dict:
    return {"index": step.index, "kind": step.kind, "text": step.text, "tool": step.tool, "args": step.args,
            "meta": step.meta}


def _api_bodies(trajectories, tag: str) -> list[bytes]:
    bodies, runs, count = [], [], 0
    for traj in trajectories:
        runs.append({
            "prompt": traj.task, "model": str(traj.meta.get("model") or ""), "agent": traj.source,
            "external_id": f"{tag}:{traj.source}:{traj.run_id}", "steps": [_step_dict(s) for s in traj.steps],
            "finish": {"status": "finished", "success": traj.success},
            "analyse": False,
        })
        count += len(traj.steps)
        if count >= BATCH_STEPS:
            bodies.append(json.dumps({"runs": runs}).encode())
            runs, count = [], 0
    if runs:
        bodies.append(json.dumps({"runs": runs}).encode())
    return bodies


def _otlp_bodies(trajectories, round_no: int) -> tuple[list[bytes], int]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    bodies, spans_total = [], 0
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    in_request = 0

    def add(trace_id: bytes, span_no: int, parent: bytes, start: int, attrs: dict, end: int = 0) -> None:
        nonlocal in_request, spans_total, request, scope
        sp = scope.spans.add()
        sp.trace_id, sp.span_id, sp.parent_span_id = trace_id, span_no.to_bytes(8, "big"), parent
        sp.name = attrs.get("openinference.span.kind", "span")
        sp.start_time_unix_nano, sp.end_time_unix_nano = start, end or start + 1_000_000
        for key, value in attrs.items():
            kv = sp.attributes.add()
            kv.key = key
            if isinstance(value, int):
                kv.value.int_value = value
            else:
                kv.value.string_value = value
        in_request += 1
        spans_total += 1
        if in_request >= OTLP_BATCH_SPANS:
            bodies.append(request.SerializeToString())
            request = ExportTraceServiceRequest()
            scope = request.resource_spans.add().scope_spans.add()
            in_request = 0

    t0 = 1_700_000_000_000_000_000
    for n, traj in enumerate(trajectories):
        trace_id = (round_no << 64 | n + 1).to_bytes(16, "big")
        root = (1).to_bytes(8, "big")
        span_no = 1
        steps = traj.steps
        for pos, step in enumerate(steps):
            start = t0 + pos * 10_000_000
            span_no += 1
            if step.kind == "thought":
                add(trace_id, span_no, root, start, {
                    "openinference.span.kind": "LLM", "llm.model_name": "eval",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": step.text,
                    "llm.token_count.prompt": 100, "llm.token_count.completion": 20})
            elif step.kind == "action":
                result = steps[pos + 1].text if pos + 1 < len(steps) and steps[pos + 1].kind == "observation" else ""
                args = step.args if isinstance(step.args, str) else json.dumps(step.args)
                add(trace_id, span_no, root, start, {
                    "openinference.span.kind": "TOOL", "tool.name": step.tool or "tool",
                    "input.value": args or "", "output.value": result})
            elif step.kind == "final":
                add(trace_id, span_no, root, start, {
                    "openinference.span.kind": "LLM", "llm.model_name": "eval",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": f"Final Answer: {step.text}"})
        add(trace_id, 1, b"", t0, {"openinference.span.kind": "AGENT", "input.value": traj.task},
            end=t0 + (len(steps) + 1) * 10_000_000)
    if in_request:
        bodies.append(request.SerializeToString())
    return bodies, spans_total


def _post(url: str, token: str, body: bytes, content_type: str) -> float:
    # Backfill: finished OTLP runs are analysed afterwards (`manage.py analyse`), as "analyse": false does
    # for the JSON API; the cost of analysis is printed on its own.
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                          "X-Agentlab-Analyse": "false"})
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as response:
        response.read()
        if response.status >= 300:
            raise RuntimeError(f"HTTP {response.status}")
    return time.perf_counter() - started


def _send_all(url: str, token: str, bodies: list[bytes], content_type: str, concurrency: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda b: _post(url, token, b, content_type), bodies))
    return time.perf_counter() - started


def _raw_copy(trajectories, owner) -> float:
    """The baseline: the same rows, COPYed by psycopg straight into tracing_step."""
    from django.db import connection, transaction
    from django.utils import timezone

    from runs.launch.models import Run
    from tracing.recorder import clean_json as _json
    from tracing.recorder import clean_text as _clean
    from tracing.steps import role_of

    project = bench_project(owner)
    runs = [Run(owner=owner, project=project, prompt=t.task, provider="import", source="copy", status="finished")
            for t in trajectories]
    Run.objects.bulk_create(runs)
    now = timezone.now()
    rows = [
        (run.pk, s.index, s.kind, role_of(s), _clean(s.text), _clean(s.tool or ""), _json(s.args), _json(s.meta or {}), 0, 0,
         0.0, now)
        for run, traj in zip(runs, trajectories, strict=True) for s in traj.steps
    ]
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur, cur.cursor.copy(
        "COPY tracing_step (run_id, index, kind, role, text, tool, args, meta, prompt_tokens, completion_tokens, "
        "latency_ms, created_at) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)
    return time.perf_counter() - started


def _latencies(base: str, token: str) -> dict[int, tuple[float, float]]:
    out = {}
    for size, requests in LATENCY_SIZES.items():
        body = json.dumps({"prompt": f"latency {size}", "model": "bench"}).encode()
        req = urllib.request.Request(f"{base}/api/runs", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req) as response:
            run_id = json.loads(response.read())["runs"][0]["id"]
        times = []
        for r in range(requests):
            steps = [{"index": r * size + i, "kind": "observation", "text": "x" * 200, "tool": "search",
                      "meta": {"status": "ok"}, "prompt_tokens": 10} for i in range(size)]
            times.append(_post(f"{base}/api/runs/{run_id}/steps", token, json.dumps({"steps": steps}).encode(),
                               "application/json") * 1000)
        out[size] = (statistics.median(times), percentile(times, 95))
    return out


def _analysis_cost(owner, trajectories) -> float:
    """Seconds per run for signals + anchor break on finish (what `"analyse": true` adds)."""
    from runs.launch.models import Run
    from tracing.ingest.services import runs_ended

    sample = list(Run.objects.filter(owner=owner, source="api").order_by("pk").values_list("pk", flat=True)[:200])
    started = time.perf_counter()
    runs_ended(sample)
    return (time.perf_counter() - started) / max(1, len(sample))


def serve(port: int, threads: int) -> None:
    """agentlab's WSGI app behind a stdlib HTTP/1.1 server with a fixed pool of threads.

    runserver starts a thread per request, and Django's connections are per
    thread, so every request would open a new Postgres connection; a pool keeps
    them, as gunicorn's workers would.
    """
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    from _django import setup

    setup(DB_NAME)
    from django.core.wsgi import get_wsgi_application

    pool = ThreadPoolExecutor(threads)

    class Handler(WSGIRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

    class PooledServer(ThreadingMixIn, WSGIServer):
        def process_request(self, request, client_address):
            pool.submit(self.process_request_thread, request, client_address)

    server = PooledServer(("127.0.0.1", port), Handler)
    server.set_app(get_wsgi_application())
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.threads)
        return
    if not EVAL_DIR.exists():
        sys.exit(f"no trajectories at {EVAL_DIR}")

    ensure_database(DB_NAME)
    from django.contrib.auth import get_user_model

    from tracing.ingest.writes import token_create

    owner = get_user_model().objects.create_user("bench")
    token = token_create(user=owner, project_id=bench_project(owner).pk, name="bench")[1]
    trajectories = _load()
    total_steps = sum(len(t.steps) for t in trajectories)
    print(f"{len(trajectories)} trajectories, {total_steps} steps from {EVAL_DIR}")

    env = {**os.environ, "DB_NAME": DB_NAME, "DEBUG": "0", "LOG_LEVEL": "ERROR"}
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--port", str(args.port), "--threads", str(args.concurrency)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/api/openapi.json", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        api_rates, copy_rates, otlp_rates = [], [], []
        for round_no in range(1, args.rounds + 1):
            bodies = _api_bodies(trajectories, f"r{round_no}")
            elapsed = _send_all(f"{base}/api/runs", token, bodies, "application/json", args.concurrency)
            api_rates.append(total_steps / elapsed)
            copy_rates.append(total_steps / _raw_copy(trajectories, owner))
            otlp, spans = _otlp_bodies(trajectories, round_no)
            elapsed = _send_all(f"{base}/v1/traces", token, otlp, "application/x-protobuf", args.concurrency)
            otlp_rates.append(spans / elapsed)
            print(f"round {round_no}: JSON API {api_rates[-1]:,.0f} steps/s ({len(bodies)} requests), "
                  f"raw COPY {copy_rates[-1]:,.0f} rows/s, OTLP {otlp_rates[-1]:,.0f} spans/s "
                  f"({spans} spans, {len(otlp)} requests)")
        latencies = _latencies(base, token)
    finally:
        server.terminate()
        server.wait(10)

    api, copy_, otlp = statistics.median(api_rates), statistics.median(copy_rates), statistics.median(otlp_rates)
    ratio = api / copy_
    print()
    print("median of rounds            value        target   ok")
    print(f"JSON API steps/s        {api:>12,.0f}  {TARGET_STEPS_PER_S:>12,}   {api >= TARGET_STEPS_PER_S}")
    print(f"raw COPY rows/s         {copy_:>12,.0f}")
    print(f"JSON API / raw COPY     {ratio:>12.2f}  {TARGET_COPY_RATIO:>12}   {ratio >= TARGET_COPY_RATIO}")
    print(f"OTLP protobuf spans/s   {otlp:>12,.0f}  {TARGET_SPANS_PER_S:>12,}   {otlp >= TARGET_SPANS_PER_S}")
    for size, (p50, p95) in latencies.items():
        print(f"POST steps, batch {size:>4}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
    print(f"analysis on finish (signals + anchor break): {_analysis_cost(owner, trajectories) * 1000:.1f} ms/run")


if __name__ == "__main__":
    main()
