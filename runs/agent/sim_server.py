"""The simulated model as an OpenAI-compatible endpoint, over HTTP or in process.

    python -m runs.agent.sim_server --host 127.0.0.1 --port 8765
    # then: OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="sim")

``sim_client()`` returns an ``openai.OpenAI`` whose transport calls the same
handler in process (no socket): the loop's client code path stays the real one.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai

try:
    import httpx2 as httpx  # the HTTP library the installed openai client is built on
except ImportError:  # pragma: no cover - upstream openai builds on httpx
    import httpx  # type: ignore[no-redef]

from runs.agent.sim_model import SYSTEM_FINGERPRINT, handle

# Request bodies above this are refused: a ReAct context is far smaller.
MAX_BODY_BYTES = 5_000_000


def _with_knobs(raw: bytes, knobs: dict[str, float]) -> bytes:
    """Client-level knobs as defaults under the request's own extra_body knobs."""
    if not knobs:
        return raw
    try:
        body = json.loads(raw or b"{}")
    except json.JSONDecodeError:
        return raw
    if isinstance(body, dict):
        given = body.get("sim") if isinstance(body.get("sim"), dict) else {}
        body["sim"] = {**knobs, **given}
        return json.dumps(body).encode()
    return raw


def sim_client(*, timeout: float = 30.0, **knobs: float) -> openai.OpenAI:
    """An OpenAI client wired in process to the simulated model (tests, demos)."""

    def transport(request: httpx.Request) -> httpx.Response:
        status, payload = handle(request.method, request.url.path, _with_knobs(request.read(), knobs))
        return httpx.Response(status, json=payload, headers={"x-model-kind": SYSTEM_FINGERPRINT})

    http_client = httpx.Client(transport=httpx.MockTransport(transport), base_url="http://sim.invalid/v1")
    return openai.OpenAI(
        api_key="sim", base_url="http://sim.invalid/v1", http_client=http_client, max_retries=0, timeout=timeout
    )


class SimHandler(BaseHTTPRequestHandler):
    server_version = "agentlab-sim/1"

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Model-Kind", SYSTEM_FINGERPRINT)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._reply(*handle("GET", self.path, b""))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._reply(413, {"error": {"message": "request body too large", "type": "invalid_request_error"}})
            return
        self._reply(*handle("POST", self.path, self.rfile.read(length)))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet by default; the agent's steps are the log that matters


def make_server(host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), SimHandler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the simulated model (OpenAI-compatible, labelled 'sim').")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    server = make_server(args.host, args.port)
    print(f"simulated model 'sim' on http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
