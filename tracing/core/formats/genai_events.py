"""GenAI log events joined to their span: the messages a model call was sent and
answered, when the instrumentation writes them as OTLP log records instead of
span attributes. Pure: no Django, no I/O.

Two shapes, both from the OpenTelemetry GenAI conventions:

* the per-message events of conventions v1.36 and before (what
  ``opentelemetry-instrumentation-openai-v2`` emits by default):
  ``gen_ai.system.message`` / ``gen_ai.user.message`` /
  ``gen_ai.assistant.message`` / ``gen_ai.tool.message`` for the input, one
  ``gen_ai.choice`` per answer, the message in the record's body;
* the one ``gen_ai.client.inference.operation.details`` event of the latest
  conventions, whose attributes are the span's own (``gen_ai.input.messages``,
  ``gen_ai.output.messages``, ``gen_ai.system_instructions``…) in structured form.

Both become the latest conventions' span attributes, which the span mapper
(tracing.core.formats.otlp) already reads; an attribute the span carries itself wins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

INPUT_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
CHOICE_EVENT = "gen_ai.choice"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
GENAI_EVENTS = frozenset({*INPUT_EVENTS, CHOICE_EVENT, DETAILS_EVENT})


def is_genai_event(name: str) -> bool:
    return name in GENAI_EVENTS


def event_key(event: dict[str, Any], occurrence: int) -> str:
    """What tells a resent event from a new one: OTLP log records carry no id.
    ``occurrence`` numbers identical records of one span within one request
    (two identical tool results sent in the same nanosecond stay two)."""
    canonical = json.dumps([event["name"], event["time_ns"], event["attrs"], event["body"], occurrence],
                           sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()


def ordered(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in the order they were emitted: by time, arrival order among equals."""
    return sorted(events, key=lambda e: e["time_ns"])


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, list):  # a chat API's multi-part content
        parts = []
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append({"type": "text", "content": item["text"]})
            elif isinstance(item, dict) and item.get("type") in ("image_url", "input_audio"):
                parts.append({"type": "image" if item["type"] == "image_url" else "audio",
                              "url": (item.get("image_url") or {}).get("url", "")
                              if isinstance(item.get("image_url"), dict) else ""})
            elif item not in (None, ""):
                parts.append({"type": "text", "content": item if isinstance(item, str) else json.dumps(
                    item, ensure_ascii=False, default=str)})
        return parts
    return [{"type": "text", "content": content if isinstance(content, str) else json.dumps(
        content, ensure_ascii=False, default=str)}]


def _call_parts(calls: Any) -> list[dict[str, Any]]:
    parts = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        parts.append({"type": "tool_call", "id": call.get("id") or "", "name": function.get("name") or "",
                      "arguments": function.get("arguments")})
    return parts


def _input_message(name: str, body: Any) -> dict[str, Any]:
    body = body if isinstance(body, dict) else {}
    role = str(body.get("role") or INPUT_EVENTS[name])
    if INPUT_EVENTS[name] == "tool":
        part: dict[str, Any] = {"type": "tool_call_response", "id": body.get("id") or ""}
        if "content" in body:  # absent: content capture is off, the result is unknown (not empty)
            part["response"] = body["content"]
        return {"role": role, "parts": [part]}
    return {"role": role, "parts": [*_text_parts(body.get("content")), *_call_parts(body.get("tool_calls"))]}


def _choice_message(body: Any) -> tuple[int, dict[str, Any]]:
    body = body if isinstance(body, dict) else {}
    message = body.get("message") if isinstance(body.get("message"), dict) else {}
    # openai-v2 nests tool_calls in the message; the conventions put them beside it.
    calls = message.get("tool_calls", body.get("tool_calls"))
    out = {"role": str(message.get("role") or "assistant"),
           "parts": [*_text_parts(message.get("content")), *_call_parts(calls)]}
    if body.get("finish_reason"):
        out["finish_reason"] = str(body["finish_reason"])
    index = body.get("index")
    return (index if isinstance(index, int) and not isinstance(index, bool) else 0), out


def content_attrs(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The span attributes a span's GenAI events stand for."""
    attrs: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    choices: list[tuple[int, dict[str, Any]]] = []
    for event in ordered(events):
        name = event["name"]
        if name == DETAILS_EVENT:
            for key, value in (event["attrs"] or {}).items():
                attrs.setdefault(key, value)
        elif name in INPUT_EVENTS:
            inputs.append(_input_message(name, event["body"]))
        elif name == CHOICE_EVENT:
            choices.append(_choice_message(event["body"]))
    if inputs:
        attrs.setdefault("gen_ai.input.messages", inputs)
    if choices:
        choices.sort(key=lambda c: c[0])
        attrs.setdefault("gen_ai.output.messages", [m for _, m in choices])
        reasons = [m["finish_reason"] for _, m in choices if "finish_reason" in m]
        if reasons:
            attrs.setdefault("gen_ai.response.finish_reasons", reasons)
    return attrs


def joined(attrs: dict[str, Any], events: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The span's attributes with what its events add, and the keys they added."""
    if not events:
        return attrs, []
    extra = {k: v for k, v in content_attrs(events).items() if attrs.get(k) in (None, "", [])}
    return ({**attrs, **extra}, sorted(extra)) if extra else (attrs, [])
