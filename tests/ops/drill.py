"""Load on a real web server process: requests on fresh connections, and the
Postgres connections the server holds meanwhile (pg_stat_activity, by the
application_name the server was started with). Used by tests/ops/test_serving.py
and bench/serving.py."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg

from tests.servers import ROOT, free_port, wait_http

MS = 1_000_000


def otlp_body(n: int) -> bytes:
    """One small OTLP/JSON trace (a model call, its tool call, the root span): one run per request."""
    trace = secrets.token_hex(16)
    t0 = (1_700_000_000_000 + n) * MS

    def kv(key: str, value: object) -> dict:
        return {"key": key, "value": {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}}

    def span(sid: int, parent: str, start: int, attrs: dict, name: str) -> dict:
        return {"traceId": trace, "spanId": f"{sid:016x}", "parentSpanId": parent, "name": name,
                "startTimeUnixNano": str(t0 + start * MS), "endTimeUnixNano": str(t0 + (start + 10) * MS),
                "attributes": [kv(k, v) for k, v in attrs.items()], "status": {}}

    root = f"{9:016x}"
    spans = [
        span(1, root, 1, {"openinference.span.kind": "LLM", "llm.model_name": "drill",
                          "llm.output_messages.0.message.role": "assistant",
                          "llm.output_messages.0.message.content": f"Look up item {n}.",
                          "llm.token_count.prompt": 20, "llm.token_count.completion": 5}, "ChatCompletion"),
        span(2, root, 12, {"openinference.span.kind": "TOOL", "tool.name": "lookup",
                           "input.value": json.dumps({"item": n}), "output.value": f"item {n} is fine"}, "lookup"),
        span(9, "", 0, {"openinference.span.kind": "AGENT", "input.value": f"Is item {n} fine?",
                        "output.value": "yes"}, "drill-agent"),
    ]
    body = {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "drill")]},
                               "scopeSpans": [{"spans": spans}]}]}
    return json.dumps(body).encode()


@dataclass
class Result:
    statuses: dict[int, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    max_connections: int = 0

    @property
    def requests_per_s(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s else 0.0

    def p(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def held_connections(db_name: str, application_name: str) -> int:
    with psycopg.connect(host=os.environ.get("DB_HOST", "127.0.0.1"), port=int(os.environ.get("DB_PORT", "5432")),
                         user=os.environ.get("DB_USER", "postgres"), dbname=db_name, autocommit=True,
                         application_name="agentlab-drill-probe") as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND application_name = %s",
                           (db_name, application_name)).fetchone()
    return int(row[0])


def fire(port: int, token: str, *, requests: int, concurrency: int, db_name: str, application_name: str,
         timeout_s: float = 30.0) -> Result:
    """POST `requests` OTLP traces, each on a new TCP connection, `concurrency` at a time,
    sampling the server's Postgres connections every 20 ms meanwhile."""
    result = Result()
    lock = threading.Lock()
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            n = held_connections(db_name, application_name)
            result.max_connections = max(result.max_connections, n)
            time.sleep(0.02)

    def one(n: int) -> None:
        body = otlp_body(n)
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        try:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/json", "Connection": "close",
                                                      "Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            response.read()
            status = response.status
        except OSError as exc:
            status = 0
            with lock:
                result.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
        with lock:
            result.statuses[status] = result.statuses.get(status, 0) + 1
            result.latencies_ms.append((time.perf_counter() - started) * 1000)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(requests)))
    result.elapsed_s = time.perf_counter() - started
    done.set()
    sampler.join()
    result.max_connections = max(result.max_connections, held_connections(db_name, application_name))
    return result


def start_gunicorn(*, db_name: str, application_name: str, workers: int = 2, threads: int = 4,
                   env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    """agentlab behind gunicorn as `make demo` and compose serve it."""
    port = free_port()
    full_env = {**os.environ, "DB_NAME": db_name, "DB_APPLICATION_NAME": application_name, "PORT": str(port),
                "WEB_WORKERS": str(workers), "WEB_THREADS": str(threads), **(env or {})}
    full_env.pop("DB_POOL_MAX_SIZE", None)
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:agentlab.gunicorn", "agentlab.wsgi"],
                            cwd=ROOT, env=full_env)
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc=proc)
    return proc, port


def start_runserver(*, db_name: str, application_name: str, env: dict[str, str] | None = None
                    ) -> tuple[subprocess.Popen, int]:
    """The baseline: Django's development server, a thread and a connection per request."""
    port = free_port()
    full_env = {**os.environ, "DB_NAME": db_name, "DB_APPLICATION_NAME": application_name, **(env or {})}
    full_env.pop("DB_POOL_MAX_SIZE", None)
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload",
                             "--insecure"], cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc=proc)
    return proc, port
