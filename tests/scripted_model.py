"""A scripted OpenAI-compatible model server for the framework tracing tests.

The real frameworks (smolagents, LangGraph, the openai-agents SDK, a plain
openai loop) talk to it over HTTP exactly as they would to a real model, with
chat completions (plain or streamed) or the Responses API. What it answers is
a script: the N-th request gets the script's N-th reply (one agent run per
server), whatever the framework re-sends as history or folds into a user turn
(smolagents merges a tool error into the user message).

A reply is ``("text", "...")`` or ``("call", tool_name, {arguments})``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple

MODEL = "scripted-model"


class ScriptedModel:
    """``script(turn, request) -> Reply``; a list is indexed by turn (its last reply repeats)."""

    def __init__(self, script: Sequence[Reply] | Callable[[int, dict], Reply]) -> None:
        self.script = script
        self.requests: list[dict] = []
        self.calls = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, turn: int, request: dict) -> Reply:
        if callable(self.script):
            return self.script(turn, request)
        return self.script[min(turn, len(self.script) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._json({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with model._lock:
                    turn = model.calls
                    model.requests.append(body)
                    model.calls += 1
                if self.path.endswith("/chat/completions"):
                    reply = model.reply(turn, body)
                    if body.get("stream"):
                        self._sse(_chat_chunks(reply, body))
                    else:
                        self._json(_chat_completion(reply, body))
                elif self.path.endswith("/responses"):
                    reply = model.reply(turn, body)
                    response = _response(reply, body)
                    if body.get("stream"):
                        self._sse(_response_events(response), named=True)
                    else:
                        self._json(response)
                else:
                    self.send_error(404)

            def _json(self, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _sse(self, events: list[dict], named: bool = False) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    if named:
                        self.wfile.write(f"event: {event['type']}\n".encode())
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                if not named:
                    self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        return Handler


def _usage(request: dict) -> dict:
    prompt = len(json.dumps(request)) // 4
    return {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}


def _call_id(reply: Reply, request: dict) -> str:
    return f"call_{len(json.dumps(request)) % 100000}_{reply[1]}"


def _chat_completion(reply: Reply, request: dict) -> dict:
    if reply[0] == "text":
        message: dict = {"role": "assistant", "content": reply[1]}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": _call_id(reply, request), "type": "function",
             "function": {"name": reply[1], "arguments": json.dumps(reply[2])}}]}
        finish = "tool_calls"
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _usage(request)}


def _chat_chunks(reply: Reply, request: dict) -> list[dict]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    if reply[0] == "text":
        words = reply[1].split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        finish = "stop"
    else:
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": _call_id(reply, request), "type": "function",
             "function": {"name": reply[1], "arguments": json.dumps(reply[2])}}]}, "finish_reason": None}]})
        finish = "tool_calls"
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": _usage(request)})
    return chunks


def _response(reply: Reply, request: dict) -> dict:
    if reply[0] == "text":
        output = [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": reply[1], "annotations": []}]}]
    else:
        cid = _call_id(reply, request)
        output = [{"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": reply[1],
                   "arguments": json.dumps(reply[2]), "status": "completed"}]
    usage = _usage(request)
    return {"id": "resp_1", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": MODEL, "output": output, "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": 7, "total_tokens": usage["total_tokens"],
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def _response_events(response: dict) -> list[dict]:
    created = {**response, "status": "in_progress", "output": []}
    events = [{"type": "response.created", "sequence_number": 0, "response": created}]
    for i, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "sequence_number": len(events), "output_index": i,
                       "item": item})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append({"type": "response.output_text.delta", "sequence_number": len(events), "output_index": i,
                           "item_id": item["id"], "content_index": 0, "delta": text, "logprobs": []})
        events.append({"type": "response.output_item.done", "sequence_number": len(events), "output_index": i,
                       "item": item})
    events.append({"type": "response.completed", "sequence_number": len(events), "response": response})
    return events
