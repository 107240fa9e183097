"""Ingestion speed: the JSON step API and OTLP/HTTP vs raw COPY, through a real HTTP server.

    .venv/bin/python bench/ingest.py [--rounds 3] [--concurrency 2] [--smoke: one round over a few runs per source]

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
  (`POST /api/runs/{id}/steps`);
* the OpenTelemetry SDK's own exporter (BatchSpanProcessor, batches of 512,
  a queue large enough to hold every span, + the OTLP/HTTP protobuf exporter)
  fed the same trajectories at once: the time the exporter needs to flush
  after the last span ended, and the stored rate (spans in the database / time
  from the first span to the flush), with analysis on (the server hands it to
  a Celery task, issue 14);
* one trace of REVERSE_SPANS spans sent one span per request in reverse order
  (issue 13 item 9): ms per request, first and last hundred; linear means the
  last hundred cost what the first did.

`--only reverse` runs the last part alone (no eval data needed), so the same
script can measure an older checkout; `--only api` the JSON API and the raw
COPY baseline alone (the issue 8 targets, in a minute).

Targets (issue 8): JSON API >= 20,000 steps/s and >= 0.3 of raw COPY; OTLP
>= 5,000 spans/s. Per-run analysis (signals + anchor break) is not in the
ingestion figure: it runs when a run is finished with `"analyse": true`; its
cost is measured and printed separately.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402
from _django import EVAL_DIR, ROOT, bench_project, ensure_database, percentile  # noqa: E402

# BENCH_DB: another scratch database, so two checkouts can measure side by side.
DB_NAME = _django.bench_db("agentlab_bench_ingest")
BATCH_STEPS = 5000
OTLP_BATCH_SPANS = 512
TARGET_STEPS_PER_S = 20_000
TARGET_COPY_RATIO = 0.3
TARGET_SPANS_PER_S = 5_000
LATENCY_SIZES = _django.sized({1: 300, 100: 60, 1000: 20}, {1: 5, 100: 2})  # batch size -> requests
# Issue 14: the SDK exporter's stored rate was about 650 spans/s on this machine.
TARGET_SDK_SPANS_PER_S = 650
REVERSE_SPANS = _django.sized(600, 20)
# The analysis tasks the server enqueues go to a queue no worker reads (purged at the end).
BENCH_QUEUE = f"bench-ingest-analysis-{DB_NAME}"


def _load():
    from tracing.core.steps import read_jsonl

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


# What an instrumented chat agent's LLM spans carry besides the reply: the
# system prompt, the tools offered and the parameters, on every call.
_SYSTEM = ("You are a ReAct agent. Think step by step, call one tool at a time, read its result, and finish "
           "with the answer when you are sure. " * 6)
_TOOLS = [json.dumps({"type": "function", "function": {"name": name, "description": f"{name} tool",
                                                        "parameters": {"type": "object", "properties": {
                                                            "query": {"type": "string"}}}}})
          for name in ("search", "lookup", "finish")]


def _input_messages(task: str, earlier) -> dict[str, str]:
    """llm.input_messages.* as OpenInference flattens them: the conversation so
    far (every call resends it whole), parameters and tools."""
    history = [("system", _SYSTEM, None, ""), ("user", task, None, "")]
    for pos, step in enumerate(earlier):
        if step.kind == "thought":
            history.append(("assistant", step.text, None, ""))
        elif step.kind == "action":
            args = step.args if isinstance(step.args, str) else json.dumps(step.args)
            history.append(("assistant", "", (f"call_{pos}", step.tool or "tool", args or "{}"), ""))
        elif step.kind == "observation":
            history.append(("tool", step.text, None, f"call_{pos - 1}"))
    attrs = {"llm.invocation_parameters": json.dumps({"temperature": 0.0, "max_tokens": 512})}
    attrs.update({f"llm.tools.{i}.tool.json_schema": t for i, t in enumerate(_TOOLS)})
    for i, (role, content, call, call_id) in enumerate(history):
        prefix = f"llm.input_messages.{i}.message."
        attrs[prefix + "role"] = role
        if content:
            attrs[prefix + "content"] = content
        if call:
            attrs.update({prefix + "tool_calls.0.tool_call.id": call[0],
                          prefix + "tool_calls.0.tool_call.function.name": call[1],
                          prefix + "tool_calls.0.tool_call.function.arguments": call[2]})
        if call_id:
            attrs[prefix + "tool_call_id"] = call_id
    return attrs


def _otlp_bodies(trajectories, round_no: int, *, messages: bool = False) -> tuple[list[bytes], int]:
    """The trajectories as OpenInference spans; with `messages`, each LLM span
    also carries what the model was sent (llm.input_messages.*, tools,
    parameters), which ingestion stores as the run's model calls."""
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
            sent = _input_messages(traj.task, steps[:pos]) if messages and step.kind in ("thought", "final") else {}
            if step.kind == "thought":
                add(trace_id, span_no, root, start, {
                    "openinference.span.kind": "LLM", "llm.model_name": "eval",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": step.text,
                    "llm.token_count.prompt": 100, "llm.token_count.completion": 20, **sent})
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
                    "llm.output_messages.0.message.content": f"Final Answer: {step.text}", **sent})
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
    """The baseline: the same rows, COPYed by psycopg straight into tracing_step.

    Every column the API writes, the search document included: without it the
    baseline skips the tsvector input and the GIN update, which cost Postgres
    about as much as the rest of the row (README-ingest.md, 2026-12-01). The
    rows (tokenising included) are built before the clock starts."""
    from django.db import connection, transaction
    from django.utils import timezone

    from runs.core.models import Run
    from tracing.core.steps import role_of
    from tracing.core.stepsearch import step_document
    from tracing.store.recorder import clean_json as _json
    from tracing.store.recorder import clean_text as _clean

    project = bench_project(owner)
    runs = [Run(owner=owner, project=project, prompt=t.task, provider="import", source="copy", status="finished")
            for t in trajectories]
    Run.objects.bulk_create(runs)
    now = timezone.now()
    rows = [
        (run.pk, s.index, s.kind, role_of(s), _clean(s.text), _clean(s.tool or ""), _json(s.args), _json(s.meta or {}), 0, 0,
         0.0, now, step_document(_clean(s.text), s.tool, s.args))
        for run, traj in zip(runs, trajectories, strict=True) for s in traj.steps
    ]
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur, cur.cursor.copy(
        "COPY tracing_step (run_id, index, kind, role, text, tool, args, meta, prompt_tokens, completion_tokens, "
        "latency_ms, created_at, search) FROM STDIN"
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
    from runs.core.models import Run
    from tracing.store.ingest.services import runs_ended

    sample = list(Run.objects.filter(owner=owner, source="api").order_by("pk").values_list("pk", flat=True)[:200])
    started = time.perf_counter()
    runs_ended(sample)
    return (time.perf_counter() - started) / max(1, len(sample))


def _sdk_exporter(base: str, token: str, trajectories, owner) -> tuple[float, float, int, int]:
    """(flush seconds, stored spans/s, spans made, spans stored) through the SDK's own exporter."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import set_span_in_context

    from tracing.store.models import IngestedSpan

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-sdk"}))
    # A queue that holds every span: the bench feeds spans far faster than any
    # agent makes them, and the SDK's default 2,048 would measure its drops.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{base}/v1/traces", headers={"Authorization": f"Bearer {token}"}), max_queue_size=1 << 20))
    tracer = provider.get_tracer("bench")
    before = IngestedSpan.objects.filter(trace__owner=owner).count()
    made = 0
    started = time.perf_counter()
    for traj in trajectories:
        t = time.time_ns()
        root = tracer.start_span("agent", start_time=t, attributes={
            "openinference.span.kind": "AGENT", "input.value": traj.task, "agent.name": "bench-sdk"})
        ctx = set_span_in_context(root)
        steps = traj.steps
        for pos, step in enumerate(steps):
            start = t + (pos + 1) * 1000
            if step.kind in ("thought", "final"):
                text = step.text if step.kind == "thought" else f"Final Answer: {step.text}"
                attrs = {"openinference.span.kind": "LLM", "llm.model_name": "eval",
                         "llm.output_messages.0.message.role": "assistant",
                         "llm.output_messages.0.message.content": text,
                         "llm.token_count.prompt": 100, "llm.token_count.completion": 20}
            elif step.kind == "action":
                result = steps[pos + 1].text if pos + 1 < len(steps) and steps[pos + 1].kind == "observation" else ""
                args = step.args if isinstance(step.args, str) else json.dumps(step.args)
                attrs = {"openinference.span.kind": "TOOL", "tool.name": step.tool or "tool",
                         "input.value": args or "", "output.value": result}
            else:
                continue
            tracer.start_span("step", context=ctx, start_time=start, attributes=attrs).end(end_time=start + 500)
            made += 1
        root.end(end_time=t + (len(steps) + 2) * 1000)
        made += 1
    last_end = time.perf_counter()
    provider.force_flush(600_000)
    flushed = time.perf_counter()
    provider.shutdown()
    stored = IngestedSpan.objects.filter(trace__owner=owner).count() - before
    return flushed - last_end, stored / (flushed - started), made, stored


def _reverse_order(base: str, token: str) -> list[float]:
    """ms per request for one trace of REVERSE_SPANS spans, one span per request, latest first."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    trace_id = os.urandom(16)
    t0 = 1_700_000_000_000_000_000
    bodies = []
    for n in range(REVERSE_SPANS, 0, -1):  # the root (n == 1, starts first) comes last
        request = ExportTraceServiceRequest()
        sp = request.resource_spans.add().scope_spans.add().spans.add()
        sp.trace_id, sp.span_id = trace_id, n.to_bytes(8, "big")
        if n == 1:
            sp.start_time_unix_nano, sp.end_time_unix_nano = t0, t0 + (REVERSE_SPANS + 1) * 1_000_000
            attrs = {"openinference.span.kind": "AGENT", "input.value": "reverse"}
        else:
            sp.parent_span_id = (1).to_bytes(8, "big")
            sp.start_time_unix_nano = t0 + n * 1_000_000
            sp.end_time_unix_nano = sp.start_time_unix_nano + 500_000
            attrs = ({"openinference.span.kind": "TOOL", "tool.name": "search", "input.value": f"query {n}",
                      "output.value": f"result {n} " * 20} if n % 2 else
                     {"openinference.span.kind": "LLM", "llm.model_name": "eval",
                      "llm.output_messages.0.message.role": "assistant",
                      "llm.output_messages.0.message.content": f"thinking about {n}"})
        sp.name = attrs["openinference.span.kind"]
        for key, value in attrs.items():
            kv = sp.attributes.add()
            kv.key, kv.value.string_value = key, value
        bodies.append(request.SerializeToString())
    return [_post(f"{base}/v1/traces", token, body, "application/x-protobuf") * 1000 for body in bodies]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _model_call_cost(server: subprocess.Popen, base: str, token: str, trajectories, args) -> dict[str, dict]:
    """OTLP ingestion with the model-call writes and without them, for LLM
    spans carrying only the reply and for LLM spans carrying the messages sent
    too: spans/s, and the server's CPU ms per 1,000 spans (which the other
    jobs on a shared machine inflate far less than wall time). The two servers
    take turns, so both see the same load."""
    from django.db import connection

    bare, bare_base = _start_server(args.port + 1, args.concurrency, calls=False)
    out: dict[str, dict] = {}
    trace_round = 1000  # trace ids unused by the rounds above
    try:
        for round_no in range(args.rounds):
            for variant, messages in (("LLM spans with the reply only", False), ("LLM spans with the messages sent", True)):
                rec = out.setdefault(variant, {"on": [], "off": [], "on_cpu": [], "off_cpu": []})
                targets = [("on", server, base), ("off", bare, bare_base)]
                for key, proc, url in targets if round_no % 2 == 0 else targets[::-1]:
                    trace_round += 1
                    bodies, spans = _otlp_bodies(trajectories, trace_round, messages=messages)
                    cpu = _cpu_s(proc.pid)
                    elapsed = _send_all(f"{url}/v1/traces", token, bodies, "application/x-protobuf", args.concurrency)
                    rec[f"{key}_cpu"].append((_cpu_s(proc.pid) - cpu) * 1e6 / spans)
                    rec[key].append(spans / elapsed)
                rec.update(mb=sum(len(b) for b in bodies) / 1e6, spans=spans)
    finally:
        bare.terminate()
        bare.wait(10)
    with connection.cursor() as cur:
        cur.execute("SELECT count(*), pg_total_relation_size('tracing_modelcall'), "
                    "pg_total_relation_size('tracing_callmessage') FROM tracing_modelcall")
        n, calls_size, messages_size = cur.fetchone()
    print(f"model calls stored: {n:,}; tracing_modelcall {calls_size / 1e6:.1f} MB, "
          f"tracing_callmessage {messages_size / 1e6:.1f} MB")
    return out


def _print_calls_cost(calls_cost: dict[str, dict], copy_rows_per_s: float) -> None:
    print("OTLP, model calls written vs not (same bodies, a second server that skips the call writes; median of "
          f"rounds; raw COPY {copy_rows_per_s:,.0f} rows/s):")
    for variant, r in calls_cost.items():
        on, off = statistics.median(r["on"]), statistics.median(r["off"])
        on_cpu, off_cpu = statistics.median(r["on_cpu"]), statistics.median(r["off_cpu"])
        print(f"  {variant:34} {r['spans']} spans, {r['mb']:.0f} MB: {on:>6,.0f} spans/s with calls, {off:>6,.0f} "
              f"without ({on / off - 1:+.0%}); server CPU {on_cpu:,.0f} vs {off_cpu:,.0f} ms per 1,000 spans "
              f"({on_cpu / off_cpu - 1:+.0%})")


def _print_reverse(times: list[float]) -> None:
    first, last = statistics.mean(times[:100]), statistics.mean(times[-100:])
    print(f"reverse-ordered trace, {REVERSE_SPANS} spans one per request: mean {statistics.mean(times):.1f} ms/request, "
          f"first 100 {first:.1f} ms, last 100 {last:.1f} ms (last / first {last / first:.2f})")


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
    if os.environ.get("BENCH_NO_CALLS") == "1":
        # The "before": the same mapping, the model calls it derives not written.
        import tracing.store.ingest.services

        tracing.store.ingest.services.calls_record = lambda batches: None

    pool = ThreadPoolExecutor(threads)

    class Handler(WSGIRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

    class PooledServer(ThreadingMixIn, WSGIServer):
        def process_request(self, request, client_address):
            pool.submit(self.process_request_thread, request, client_address)

    from agentlab.wsgi import application  # what gunicorn serves, with its start-up settings

    server = PooledServer(("127.0.0.1", port), Handler)
    server.set_app(application)
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_server(port: int, threads: int, *, calls: bool = True) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "DB_NAME": DB_NAME, "DEBUG": "0", "LOG_LEVEL": "ERROR", "RUN_QUEUE": BENCH_QUEUE,
           "BENCH_NO_CALLS": "0" if calls else "1"}
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--port", str(port), "--threads", str(threads)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{base}/api/openapi.json", timeout=1).read()
            break
        except OSError:
            time.sleep(0.2)
    return server, base


def _purge_bench_queue() -> None:
    from agentlab.celery import app

    with contextlib.suppress(Exception), app.connection_for_write() as conn:
        conn.default_channel.queue_purge(BENCH_QUEUE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=_django.sized(3, 1))
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--port", type=int, default=_django.sized(8731, _free_port()))
    parser.add_argument("--only", choices=["reverse", "calls", "api"], default=None)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.threads)
        return
    if not EVAL_DIR.exists() and args.only is None:
        sys.exit(f"no trajectories at {EVAL_DIR}")

    ensure_database(DB_NAME)
    from django.contrib.auth import get_user_model

    from tracing.store.ingest.writes import token_create

    owner = get_user_model().objects.create_user("bench")
    token = token_create(user=owner, project_id=bench_project(owner).pk, name="bench")[1]
    if args.only == "reverse":
        server, base = _start_server(args.port, args.concurrency)
        try:
            _print_reverse(_reverse_order(base, token))
        finally:
            server.terminate()
            server.wait(10)
        return
    trajectories = _load()
    if args.only == "calls":
        server, base = _start_server(args.port, args.concurrency)
        try:
            copy_ = statistics.median(sum(len(t.steps) for t in trajectories) / _raw_copy(trajectories, owner)
                                      for _ in range(args.rounds))
            _print_calls_cost(_model_call_cost(server, base, token, trajectories, args), copy_)
        finally:
            server.terminate()
            server.wait(10)
        return
    total_steps = sum(len(t.steps) for t in trajectories)
    print(f"{len(trajectories)} trajectories, {total_steps} steps from {EVAL_DIR}")

    server, base = _start_server(args.port, args.concurrency)
    try:
        api_rates, copy_rates, otlp_rates, sdk = [], [], [], []
        for round_no in range(1, args.rounds + 1):
            bodies = _api_bodies(trajectories, f"r{round_no}")
            elapsed = _send_all(f"{base}/api/runs", token, bodies, "application/json", args.concurrency)
            api_rates.append(total_steps / elapsed)
            copy_rates.append(total_steps / _raw_copy(trajectories, owner))
            if args.only == "api":
                print(f"round {round_no}: JSON API {api_rates[-1]:,.0f} steps/s ({len(bodies)} requests), "
                      f"raw COPY {copy_rates[-1]:,.0f} rows/s, ratio {api_rates[-1] / copy_rates[-1]:.2f}")
                continue
            otlp, spans = _otlp_bodies(trajectories, round_no)
            elapsed = _send_all(f"{base}/v1/traces", token, otlp, "application/x-protobuf", args.concurrency)
            otlp_rates.append(spans / elapsed)
            sdk.append(_sdk_exporter(base, token, trajectories, owner))
            print(f"round {round_no}: JSON API {api_rates[-1]:,.0f} steps/s ({len(bodies)} requests), "
                  f"raw COPY {copy_rates[-1]:,.0f} rows/s, OTLP {otlp_rates[-1]:,.0f} spans/s "
                  f"({spans} spans, {len(otlp)} requests); SDK exporter: flush {sdk[-1][0]:.2f} s, "
                  f"stored {sdk[-1][1]:,.0f} spans/s, {sdk[-1][3]} of {sdk[-1][2]} spans stored")
        if args.only == "api":
            api, copy_ = statistics.median(api_rates), statistics.median(copy_rates)
            print(f"median: JSON API {api:,.0f} steps/s (target {TARGET_STEPS_PER_S:,}), raw COPY {copy_:,.0f} rows/s, "
                  f"ratio {api / copy_:.2f} (target {TARGET_COPY_RATIO})")
            return
        latencies = _latencies(base, token)
        reverse = _reverse_order(base, token)
        calls_cost = _model_call_cost(server, base, token, trajectories, args)
    finally:
        server.terminate()
        server.wait(10)
        _purge_bench_queue()

    api, copy_, otlp = statistics.median(api_rates), statistics.median(copy_rates), statistics.median(otlp_rates)
    flush, stored = statistics.median(r[0] for r in sdk), statistics.median(r[1] for r in sdk)
    ratio = api / copy_
    print()
    print("median of rounds            value        target   ok")
    print(f"JSON API steps/s        {api:>12,.0f}  {TARGET_STEPS_PER_S:>12,}   {api >= TARGET_STEPS_PER_S}")
    print(f"raw COPY rows/s         {copy_:>12,.0f}")
    print(f"JSON API / raw COPY     {ratio:>12.2f}  {TARGET_COPY_RATIO:>12}   {ratio >= TARGET_COPY_RATIO}")
    print(f"OTLP protobuf spans/s   {otlp:>12,.0f}  {TARGET_SPANS_PER_S:>12,}   {otlp >= TARGET_SPANS_PER_S}")
    print(f"SDK exporter stored/s   {stored:>12,.0f}  {TARGET_SDK_SPANS_PER_S:>12,}   {stored >= TARGET_SDK_SPANS_PER_S}")
    print(f"SDK exporter flush s    {flush:>12.2f}")
    for size, (p50, p95) in latencies.items():
        print(f"POST steps, batch {size:>4}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")
    _print_reverse(reverse)
    _print_calls_cost(calls_cost, copy_)
    print(f"analysis on finish (signals + anchor break): {_analysis_cost(owner, trajectories) * 1000:.1f} ms/run")


if __name__ == "__main__":
    main()
