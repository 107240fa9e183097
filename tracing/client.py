"""A small client for agentlab's step API: stream any agent's steps in. Standard library only.

    from tracing.client import Client

    client = Client("http://127.0.0.1:8000", token="al_...")   # or AGENTLAB_URL / AGENTLAB_TOKEN
    with client.run("Who wrote Dream of the Red Chamber?", model="gpt-4o", agent="my-loop") as run:
        run.thought("I should search for the novel.")
        run.action("search", {"query": "Dream of the Red Chamber author"})
        run.observation("Cao Xueqin wrote ...", tool="search")
        run.final("Cao Xueqin")
        run.success = True   # when the agent knows its outcome; else it stays unscored
    # leaving the block flushes the batch and finishes the run (as "error" on an
    # exception, "stopped" on Ctrl-C)

A dialogue: ``run.user("I want to return my order")`` for the user's turns,
``run.reply("Which order?")`` for the agent's; ``context={"system": ..., "tools":
[...]}`` on ``client.run`` for what the agent was told. Any step takes ``role=``
(assistant, tool, user, system, watchdog) when its kind and tool do not say it.

Guarded (``client.run(..., guard=True)``): agentlab's watchdog judges each step
as it arrives, with the policy and texts of its own loop. A hint or a redirect
waits in ``run.pending_hint()`` for the agent's next prompt; a stop raises
``StopRun`` from the step call that earned it, which the loop may catch to give
its fallback answer (the run then ends ``stopped`` by the watchdog).
``guard="observe"`` is shadow mode: decisions are recorded on the server and
in ``run.decisions``, nothing is acted on. A guarded run sends every step at
once (no batching), so the decision comes back before the next one.

    with client.run(task, guard=True) as run:
        try:
            while ...:
                prompt = build_prompt(..., note=run.pending_hint())
                ...
        except StopRun as stop:
            run.final(f"Stopped: {stop.text}")

Steps are buffered and sent in batches; every request is retried with backoff
on connection errors, 429 and 5xx. Retrying is safe: steps are idempotent on
(run, index) and a run is created under a client-chosen ``external_id``.
Copy this file into a project that does not install agentlab: it imports
nothing outside the standard library.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

# Steps per request: large enough that a fast loop is not one request per
# step, small enough that the timeline of a live run stays current.
DEFAULT_BATCH_SIZE = 100
# A buffered step waits at most this long for its batch to fill.
DEFAULT_FLUSH_INTERVAL_S = 1.0
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 0.5
# Bodies above this are gzipped: JSON steps compress 5-10x, small ones are not worth the CPU.
GZIP_MIN_BYTES = 64 * 1024
# The server refuses more per request; larger batches are split.
MAX_STEPS_PER_REQUEST = 10_000
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class IngestError(Exception):
    """The server refused a request (4xx) or stayed unreachable after the retries."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class StopRun(Exception):
    """The watchdog stopped the run: ``decision`` is what the server sent
    ({"tier": "stop", "detector", "text", "evidence", "step"})."""

    def __init__(self, decision: dict) -> None:
        super().__init__(decision.get("text", "stopped by the watchdog"))
        self.decision = decision
        self.text: str = decision.get("text", "")
        self.detector: str = decision.get("detector", "")
        self.step: int | None = decision.get("step")


# Client.run(guard=...): what the server is asked for.
_GUARD_MODES = {True: "act", "act": "act", "observe": "observe", False: None, None: None}


def decisions_of(answer: dict) -> list[dict]:
    """The watchdog's decisions in a step API answer, oldest first ([] for "none")."""
    if answer.get("decisions"):
        return list(answer["decisions"])
    decision = answer.get("decision")
    return [decision] if isinstance(decision, dict) else []


class Client:
    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF_S,
    ) -> None:
        base_url = base_url or os.environ.get("AGENTLAB_URL", "http://127.0.0.1:8000")
        token = token or os.environ.get("AGENTLAB_TOKEN", "")
        if not token:
            raise IngestError("no API token: pass token= or set AGENTLAB_TOKEN")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    # -- HTTP --

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
            if len(data) >= GZIP_MIN_BYTES:
                data = gzip.compress(data, compresslevel=1)
                headers["Content-Encoding"] = "gzip"
        attempt = 0
        while True:
            req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    payload = response.read()
                return json.loads(payload) if payload else None
            except urllib.error.HTTPError as exc:
                detail = _error_text(exc)
                if exc.code not in _RETRY_STATUSES or attempt >= self.retries:
                    raise IngestError(f"{method} {path}: HTTP {exc.code}: {detail}", exc.code) from exc
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if attempt >= self.retries:
                    raise IngestError(f"{method} {path}: {exc}") from exc
            time.sleep(self.backoff * 2**attempt)
            attempt += 1

    # -- the API, one call each --

    def create_run(self, prompt: str = "", *, model: str = "", agent: str = "", external_id: str | None = None,
                   conversation_id: str = "", metadata: dict | None = None, context: dict | None = None,
                   guard: bool | str = False) -> dict:
        body = {"prompt": prompt, "model": model, "agent": agent,
                "external_id": external_id or uuid.uuid4().hex, "conversation_id": conversation_id,
                "metadata": metadata or {}}
        if context:
            body["context"] = context
        if guard not in _GUARD_MODES:
            raise ValueError(f"guard must be True, False or 'observe', not {guard!r}")
        if _GUARD_MODES[guard]:
            body["guard"] = _GUARD_MODES[guard]
        return self.request("POST", "/api/runs", body)["runs"][0]

    def append(self, run_id: int, steps: list[dict]) -> dict:
        """Send steps; returns what was written and the watchdog's decisions on them (guarded runs)."""
        result: dict = {"written": 0, "duplicates": 0, "decisions": []}
        for start in range(0, len(steps), MAX_STEPS_PER_REQUEST):
            part = self.request("POST", f"/api/runs/{run_id}/steps", {"steps": steps[start:start + MAX_STEPS_PER_REQUEST]})
            result["written"] += part["written"]
            result["duplicates"] += part["duplicates"]
            result["decisions"] += decisions_of(part)
        return result

    def finish(self, run_id: int, status: str = "finished", *, final_answer: str = "", reason: str = "",
               success: bool | None = None) -> dict:
        """End the run: status "finished" (the agent ended on its own), "stopped"
        (a person stopped it) or "error"; `success` is its outcome when known."""
        body = {"status": status, "final_answer": final_answer, "reason": reason, "success": success}
        return self.request("POST", f"/api/runs/{run_id}/finish", body)

    def get_run(self, run_id: int) -> dict:
        return self.request("GET", f"/api/runs/{run_id}")

    def run(self, prompt: str = "", *, batch_size: int = DEFAULT_BATCH_SIZE,
            flush_interval: float = DEFAULT_FLUSH_INTERVAL_S, guard: bool | str = False, **fields: Any) -> RunRecorder:
        """A run to record into; ``guard=True`` acts on the watchdog's decisions,
        ``guard="observe"`` only records them (shadow mode)."""
        return RunRecorder(self, prompt, batch_size=batch_size, flush_interval=flush_interval, guard=guard, **fields)


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
        return str(json.loads(body).get("error", body))
    except (ValueError, AttributeError, OSError):
        return exc.reason if isinstance(exc.reason, str) else ""


class RunRecorder:
    """One run: numbered steps, buffered and sent in batches. A context manager."""

    def __init__(self, client: Client, prompt: str = "", *, batch_size: int = DEFAULT_BATCH_SIZE,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL_S, guard: bool | str = False, **fields: Any) -> None:
        self.client = client
        self.guard = _GUARD_MODES.get(guard) if guard in _GUARD_MODES else guard
        # Guarded: every step is sent at once, so its decision is back before the next.
        self.batch_size = 1 if self.guard else max(1, batch_size)
        self.flush_interval = flush_interval
        # Every decision the server sent, oldest first (in shadow mode too).
        self.decisions: list[dict] = []
        self.stop: dict | None = None
        self._hint: str | None = None
        created = client.create_run(prompt, guard=guard, **fields)
        self.id: int = created["id"]
        self.url: str = client.base_url + created.get("url", "")
        self.next_index = 0
        self.final_answer: str | None = None
        # The outcome, when the agent knows it (a test passed, a reward): sent
        # when the block ends. None leaves the run unscored.
        self.success: bool | None = None
        self.finished = False
        self._buffer: list[dict] = []
        self._oldest = 0.0

    def step(self, kind: str, text: str = "", *, tool: str | None = None, args: Any = None,
             meta: dict | None = None, prompt_tokens: int = 0, completion_tokens: int = 0,
             latency_ms: float = 0.0, role: str | None = None) -> int:
        index = self.next_index
        self.next_index += 1
        step = {"index": index, "kind": kind, "text": text, "tool": tool, "args": args, "meta": meta or {},
                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "latency_ms": latency_ms}
        if role is not None:
            step["role"] = role  # else the server infers it from kind and tool
        self._buffer.append(step)
        if len(self._buffer) == 1:
            self._oldest = time.monotonic()
        if len(self._buffer) >= self.batch_size or time.monotonic() - self._oldest >= self.flush_interval:
            self.flush()
        return index

    def thought(self, text: str, **kw: Any) -> int:
        return self.step("thought", text, **kw)

    def action(self, tool: str, args: Any = None, text: str = "", **kw: Any) -> int:
        shown = text or f"{tool}({args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})"
        return self.step("action", shown, tool=tool, args=args, **kw)

    def observation(self, text: str, *, tool: str | None = None, status: str = "ok", **kw: Any) -> int:
        meta = {"status": status, **(kw.pop("meta", None) or {})}
        return self.step("observation", text, tool=tool, meta=meta, **kw)

    def user(self, text: str, **kw: Any) -> int:
        """The user's turn in a dialogue: evidence for the agent, never a tool's result."""
        return self.step("observation", text, tool="user", role="user", **kw)

    def reply(self, text: str, **kw: Any) -> int:
        """The agent's message to the user (a turn of the dialogue, not a tool call)."""
        return self.step("action", text, tool="respond", args={"content": text}, role="assistant", **kw)

    def system(self, text: str, **kw: Any) -> int:
        """A system or developer note met mid-run (a policy reminder, a handoff)."""
        return self.step("observation", text, tool="system", role="system", **kw)

    def final(self, answer: str, **kw: Any) -> int:
        self.final_answer = answer
        return self.step("final", answer, **kw)

    def error(self, text: str, **kw: Any) -> int:
        return self.step("error", text, **kw)

    def flush(self) -> None:
        if self._buffer:
            batch, self._buffer = self._buffer, []
            answer = self.client.append(self.id, batch)
            self._decide(answer["decisions"])

    def _decide(self, decisions: list[dict]) -> None:
        self.decisions += decisions
        if self.guard != "act" or self.stop is not None:
            return
        for decision in decisions:
            if decision.get("tier") == "stop":
                self.stop = decision
                raise StopRun(decision)
            self._hint = decision.get("text") or None

    def pending_hint(self) -> str | None:
        """The watchdog's latest hint or redirect not yet taken, to put into the
        agent's next prompt (None when there is none, and always in shadow mode)."""
        hint, self._hint = self._hint, None
        return hint

    def finish(self, status: str = "finished", *, final_answer: str | None = None, reason: str = "",
               success: bool | None = None) -> dict:
        self.flush()
        self.finished = True
        answer = final_answer if final_answer is not None else (self.final_answer or "")
        if success is None and status == "finished":
            success = self.success
        return self.client.finish(self.id, status, final_answer=answer, reason=reason, success=success)

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.finished:
            return
        if exc is None:
            # Ended on its own: finished, with the outcome if the agent set one.
            self.finish("finished", reason="" if self.final_answer is not None else "no final answer")
            return
        # The agent's own exception is the one to see, not a failed finish.
        with contextlib.suppress(IngestError):
            if isinstance(exc, StopRun):
                # The agent acknowledges the stop: the run ends stopped by the watchdog.
                self.finish("stopped", reason=f"stopped by the watchdog ({exc.detector})")
            elif isinstance(exc, KeyboardInterrupt):
                self.finish("stopped", reason="stopped by the user (KeyboardInterrupt)")
            else:
                self.finish("error", reason=f"{exc_type.__name__}: {exc}")
