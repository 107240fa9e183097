"""OTLP/HTTP trace requests -> spans -> numbered ReAct steps. Pure: no Django, no I/O.

Two halves:

* decoding: an ``ExportTraceServiceRequest`` in protobuf or in OTLP's JSON
  encoding becomes a flat list of :class:`Span` (ids as lower-case hex,
  attributes as plain Python values), or an :class:`OtlpError` naming the
  offending field;
* mapping: the spans of one trace, in order, become ``tracing.core.steps.Step``
  records. A :class:`TraceState` carries what a later batch needs (the next
  index, tool calls still waiting for their result), so spans can stream in
  as the exporter sends them.

Span classification follows OpenInference (``openinference.span.kind``) first,
then the OpenTelemetry GenAI conventions (``gen_ai.operation.name``), then any
``gen_ai.tool.*`` / model attribute. Both conventions flatten messages
differently (OpenInference: ``llm.output_messages.0.message.tool_calls.0...``;
GenAI: one JSON attribute ``gen_ai.output.messages`` with typed parts); both are
read into the same small message dicts.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from tracing.core import shown_json
from tracing.core.formats import genai_events, payloads
from tracing.core.formats.otlp_labels import LABEL_ATTRS
from tracing.core.model_calls import MEDIA_KINDS, ModelCallRecord, media_part, prompt_segments
from tracing.core.steps import Step

# OTLP ids: 16-byte trace ids and 8-byte span ids, hex in JSON, raw in protobuf.
TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
# Attribute values (kvlist / array) nested deeper than this are refused: no
# instrumentation nests more than a few levels, and a recursive walk over an
# attacker's 10,000-level value must not reach Python's recursion limit.
MAX_ATTRIBUTE_DEPTH = 16
# Attribute strings are cut to this many characters when decoded: a 10 MB
# prompt dump is stored and shown as its first quarter mebibyte (a note says
# how long it was), not copied whole into every step and page that shows it.
MAX_ATTRIBUTE_CHARS = 262_144
# Counters (tokens) past this are an exporter's bug, not a model's usage; the
# step's columns are 32-bit.
MAX_COUNT = 2**31 - 1
# Step.tool is a varchar(120).
TOOL_CHARS = 120
# Tool calls that end the run with an answer rather than act on the world
# (agentlab's own `finish`, the ReAct paper's `Finish[...]`, smolagents' `final_answer`).
FINISH_TOOLS = frozenset({"finish", "final_answer", "final-answer", "submit_final_answer"})

# A trace's own word on its outcome (true / false) on any span, the root's
# usually; without it an OTLP run is unscored, as a client's run is.
SUCCESS_ATTR = "agentlab.success"
# TraceState.tool_actions keeps this many call ids.
MAX_TOOL_ACTIONS = 256

_HEX = frozenset("0123456789abcdef")
_FINAL_RE = re.compile(r"Final Answer[ \t]*:[ \t]*(.*)", re.S | re.I)
_ACTION_RE = re.compile(r"^[ \t]*Action(?:[ \t]*\d+)?[ \t]*:[ \t]*([A-Za-z_][\w-]*)[ \t]*\[(.*)\][ \t.]*$", re.M)
_THOUGHT_RE = re.compile(r"^\s*Thought(?:\s*\d+)?\s*:\s*", re.I)
# A tool result sent back to the model as text that reports a failure: the
# GenAI ``tool_call_response`` part and a tool-role message have no status
# field, and "Error: RuntimeError: backend unavailable" is not off-topic data.
_ERROR_TEXT_RE = re.compile(
    r"^\s*(?:error\b|exception\b|traceback \(most recent call last\)|[A-Za-z_.]*(?:Error|Exception)\s*:|"
    r"an error occurred while running the tool)", re.I)


class OtlpError(ValueError):
    """A request that is not valid OTLP; the message names the field."""


# --- decoding ---------------------------------------------------------------------


@dataclass
class Span:
    trace_id: str  # 32 hex digits
    span_id: str  # 16 hex digits
    parent_id: str  # "" for a root span
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any] = field(default_factory=dict)
    status: str = "unset"  # unset | ok | error
    status_message: str = ""
    service: str = ""
    # The resource's label attributes (tag.tags, metadata, session.id,
    # user.id): an SDK often sets them once per process, not on each span.
    resource_labels: dict[str, Any] = field(default_factory=dict)
    # GenAI log events joined to this span (tracing.core.formats.genai_events), as
    # received: the messages, when the instrumentation logs them instead.
    events: list[dict[str, Any]] = field(default_factory=list)
    # The span's standard ``exception`` event as "Type: message": often the only
    # place a failed tool call's cause is named.
    exception: str = ""
    # Keys of ``attrs`` that ``events`` stand for: derived again, never stored.
    derived: list[str] = field(default_factory=list)

    def join(self, events: Iterable[dict[str, Any]]) -> None:
        """Add GenAI log events; the attributes they stand for are derived again from all of them."""
        raw = {k: v for k, v in self.attrs.items() if k not in self.derived}
        have = {e.get("key") for e in self.events}
        self.events = genai_events.ordered([*self.events, *(e for e in events if e.get("key") not in have)])
        self.attrs, self.derived = genai_events.joined(raw, self.events)

    @property
    def duration_ms(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e6

    def to_payload(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies every attribute value, a third
        # of an OTLP request's time; attrs is this span's own dict already.
        attrs = {k: v for k, v in self.attrs.items() if k not in self.derived} if self.derived else self.attrs
        payload = {"trace_id": self.trace_id, "span_id": self.span_id, "parent_id": self.parent_id,
                   "name": self.name, "start_ns": self.start_ns, "end_ns": self.end_ns, "attrs": attrs,
                   "status": self.status, "status_message": self.status_message, "service": self.service,
                   "resource_labels": self.resource_labels}
        if self.events:
            payload["events"] = self.events
        if self.exception:
            payload["exception"] = self.exception
        return payload

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> Span:
        span = cls(**data)
        if span.events:
            span.attrs, span.derived = genai_events.joined(span.attrs, span.events)
        return span


_STATUS_CODES = {0: "unset", 1: "ok", 2: "error", "STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok",
                 "STATUS_CODE_ERROR": "error"}


def _cap(text: str) -> str:
    if len(text) <= MAX_ATTRIBUTE_CHARS:
        return text
    return f"{text[:MAX_ATTRIBUTE_CHARS]}… [cut by agentlab: {len(text):,} characters in all]"


def _double(value: float) -> float | str:
    # jsonb has no NaN or infinity: keep them readable as text.
    return value if math.isfinite(value) else str(value)


def _check_depth(where: str, depth: int) -> None:
    if depth > MAX_ATTRIBUTE_DEPTH:
        raise OtlpError(f"{where} is nested more than {MAX_ATTRIBUTE_DEPTH} levels deep")


def _any_pb(value: Any, where: str, depth: int = 0) -> Any:
    _check_depth(where, depth)
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_pb(v, where, depth + 1) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_pb(kv.value, where, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return _cap(base64.b64encode(value.bytes_value).decode("ascii"))
    if kind == "string_value":
        return _cap(value.string_value)
    if kind == "double_value":
        return _double(value.double_value)
    return getattr(value, kind)


def _id_hex(raw: bytes, size: int, where: str, *, required: bool) -> str:
    if not raw:
        if required:
            raise OtlpError(f"{where} is missing")
        return ""
    if len(raw) != size or not any(raw):
        raise OtlpError(f"{where} must be {size} bytes and not all zero")
    return raw.hex()


def decode_protobuf(body: bytes) -> list[Span]:
    """Spans of an ``application/x-protobuf`` ExportTraceServiceRequest."""
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as exc:  # a deployment without opentelemetry-proto: JSON still works
        raise OtlpError("this server cannot read protobuf OTLP (opentelemetry-proto is not installed); "
                        "send application/json") from exc

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:  # also invalid UTF-8 in a string field, and protobuf's own depth limit
        if "Depth" in str(exc):
            raise OtlpError("the protobuf body is nested too deeply (attribute values within values)") from exc
        raise OtlpError(f"the body is not an OTLP ExportTraceServiceRequest in protobuf: {exc}") from exc
    spans: list[Span] = []
    for ri, rs in enumerate(request.resource_spans):
        service = ""
        resource_labels = {}
        for kv in rs.resource.attributes:
            if kv.key == "service.name":
                service = str(_any_pb(kv.value, f"resourceSpans[{ri}].resource.attributes"))
            elif kv.key in LABEL_ATTRS:
                resource_labels[kv.key] = _any_pb(kv.value, f"resourceSpans[{ri}].resource.attributes[{kv.key!r}]")
        for si, ss in enumerate(rs.scope_spans):
            for pi, sp in enumerate(ss.spans):
                where = f"resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}]"
                attrs = {kv.key: _any_pb(kv.value, f"{where}.attributes[{kv.key!r}]") for kv in sp.attributes}
                spans.append(
                    Span(
                        trace_id=_id_hex(sp.trace_id, TRACE_ID_BYTES, f"{where}.traceId", required=True),
                        span_id=_id_hex(sp.span_id, SPAN_ID_BYTES, f"{where}.spanId", required=True),
                        parent_id=_id_hex(sp.parent_span_id, SPAN_ID_BYTES, f"{where}.parentSpanId", required=False),
                        name=_cap(sp.name),
                        start_ns=sp.start_time_unix_nano,
                        end_ns=sp.end_time_unix_nano,
                        attrs=attrs,
                        status=_STATUS_CODES.get(sp.status.code, "unset"),
                        status_message=_cap(sp.status.message),
                        service=service,
                        resource_labels=resource_labels,
                        exception=_exception_text(
                            {kv.key: _any_pb(kv.value, f"{where}.events[{ei}].attributes[{kv.key!r}]")
                             for kv in ev.attributes} for ei, ev in enumerate(sp.events) if ev.name == "exception"),
                    )
                )
    return spans


def _exception_text(events: Iterable[dict[str, Any]]) -> str:
    """The last ``exception`` span event as "Type: message" (the conventions' exception.* attributes)."""
    text = ""
    for attrs in events:
        kind, message = _text(attrs.get("exception.type")).strip(), _text(attrs.get("exception.message")).strip()
        text = f"{kind}: {message}" if kind and message else kind or message or text
    return _cap(text)


def _list(obj: dict, key: str, where: str, *aliases: str) -> list:
    for name in (key, *aliases):
        if name in obj:
            value = obj[name]
            if value is None:
                return []
            if not isinstance(value, list):
                raise OtlpError(f"{where}.{name} must be an array")
            return value
    return []


def _obj(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise OtlpError(f"{where} must be an object")
    return value


def _uint(value: Any, where: str) -> int:
    # OTLP JSON writes 64-bit integers as decimal strings; numbers are accepted too.
    if isinstance(value, bool):
        raise OtlpError(f"{where} must be an integer (a decimal string or a number)")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.isdigit():
        number = int(value)
    else:
        raise OtlpError(f"{where} must be an integer (a decimal string or a number)")
    if number < 0 or number >= 2**64:
        raise OtlpError(f"{where} is out of range")
    return number


def _hex_id(value: Any, size: int, where: str, *, required: bool) -> str:
    if value in (None, ""):
        if required:
            raise OtlpError(f"{where} is missing")
        return ""
    if not isinstance(value, str):
        raise OtlpError(f"{where} must be a hex string")
    text = value.lower()
    if len(text) != size * 2 or not set(text) <= _HEX or set(text) == {"0"}:
        raise OtlpError(f"{where} must be {size * 2} hex digits and not all zero")
    return text


def _any_json(value: Any, where: str, depth: int = 0) -> Any:
    _check_depth(where, depth)
    if not isinstance(value, dict):
        raise OtlpError(f"{where} must be an AnyValue object such as {{\"stringValue\": \"...\"}}")
    if not value:
        return None
    if len(value) != 1:
        raise OtlpError(f"{where} must have exactly one of stringValue, intValue, ...")
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        if not isinstance(inner, str):
            raise OtlpError(f"{where}.stringValue must be a string")
        return _cap(inner)
    if kind == "boolValue":
        if not isinstance(inner, bool):
            raise OtlpError(f"{where}.boolValue must be true or false")
        return inner
    if kind == "intValue":
        if isinstance(inner, str) and re.fullmatch(r"-?\d{1,20}", inner):
            return int(inner)
        if isinstance(inner, int) and not isinstance(inner, bool):
            return inner
        raise OtlpError(f"{where}.intValue must be an integer")
    if kind == "doubleValue":
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            try:
                return _double(float(inner))
            except OverflowError as exc:
                raise OtlpError(f"{where}.doubleValue is out of range") from exc
        raise OtlpError(f"{where}.doubleValue must be a number")
    if kind == "bytesValue":
        if not isinstance(inner, str):
            raise OtlpError(f"{where}.bytesValue must be a base64 string")
        return _cap(inner)
    if kind == "arrayValue":
        values = _list(_obj(inner, f"{where}.arrayValue"), "values", f"{where}.arrayValue")
        return [_any_json(v, f"{where}.arrayValue.values[{i}]", depth + 1) for i, v in enumerate(values)]
    if kind == "kvlistValue":
        values = _list(_obj(inner, f"{where}.kvlistValue"), "values", f"{where}.kvlistValue")
        return _attributes_json(values, f"{where}.kvlistValue.values", depth + 1)
    raise OtlpError(f"{where} has an unknown value type {kind!r}")


def _attributes_json(items: list, where: str, depth: int = 0) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    for i, kv in enumerate(items):
        kv = _obj(kv, f"{where}[{i}]")
        key = kv.get("key")
        if not isinstance(key, str):
            raise OtlpError(f"{where}[{i}].key must be a string")
        attrs[key] = _any_json(kv.get("value", {}), f"{where}[{i}].value", depth)
    return attrs


def decode_json(data: Any) -> list[Span]:
    """Spans of an ExportTraceServiceRequest in OTLP's JSON encoding (already parsed)."""
    root = _obj(data, "the body")
    spans: list[Span] = []
    for ri, rs in enumerate(_list(root, "resourceSpans", "request")):
        where_r = f"resourceSpans[{ri}]"
        rs = _obj(rs, where_r)
        resource = _obj(rs.get("resource") or {}, f"{where_r}.resource")
        resource_attrs = _attributes_json(_list(resource, "attributes", f"{where_r}.resource"),
                                          f"{where_r}.resource.attributes")
        service = str(resource_attrs.get("service.name") or "")
        resource_labels = {k: v for k, v in resource_attrs.items() if k in LABEL_ATTRS}
        for si, ss in enumerate(_list(rs, "scopeSpans", where_r, "instrumentationLibrarySpans")):
            where_s = f"{where_r}.scopeSpans[{si}]"
            ss = _obj(ss, where_s)
            for pi, sp in enumerate(_list(ss, "spans", where_s)):
                where = f"{where_s}.spans[{pi}]"
                sp = _obj(sp, where)
                status = _obj(sp.get("status") or {}, f"{where}.status")
                name = sp.get("name", "")
                if not isinstance(name, str):
                    raise OtlpError(f"{where}.name must be a string")
                message = status.get("message", "")
                if not isinstance(message, str):
                    raise OtlpError(f"{where}.status.message must be a string")
                spans.append(
                    Span(
                        trace_id=_hex_id(sp.get("traceId"), TRACE_ID_BYTES, f"{where}.traceId", required=True),
                        span_id=_hex_id(sp.get("spanId"), SPAN_ID_BYTES, f"{where}.spanId", required=True),
                        parent_id=_hex_id(sp.get("parentSpanId"), SPAN_ID_BYTES, f"{where}.parentSpanId",
                                          required=False),
                        name=_cap(name),
                        start_ns=_uint(sp.get("startTimeUnixNano", 0), f"{where}.startTimeUnixNano"),
                        end_ns=_uint(sp.get("endTimeUnixNano", 0), f"{where}.endTimeUnixNano"),
                        attrs=_attributes_json(_list(sp, "attributes", where), f"{where}.attributes"),
                        status=_STATUS_CODES.get(status.get("code", 0), "unset"),
                        status_message=_cap(message),
                        service=service,
                        resource_labels=resource_labels,
                        exception=_exception_text(_span_events_json(sp, where)),
                    )
                )
    return spans


def _span_events_json(span: dict, where: str) -> list[dict[str, Any]]:
    found = []
    for i, event in enumerate(_list(span, "events", where)):
        event = _obj(event, f"{where}.events[{i}]")
        if event.get("name") == "exception":
            found.append(_attributes_json(_list(event, "attributes", f"{where}.events[{i}]"),
                                          f"{where}.events[{i}].attributes"))
    return found


# --- classification and message extraction --------------------------------------

_OI_KINDS = {"LLM": "llm", "TOOL": "tool", "RETRIEVER": "tool", "AGENT": "agent", "CHAIN": "chain"}
_GENAI_OPS = {"chat": "llm", "text_completion": "llm", "generate_content": "llm", "completion": "llm",
              "execute_tool": "tool", "invoke_agent": "agent", "create_agent": "agent"}
_MODEL_KEYS = ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model")
_PROMPT_TOKEN_KEYS = ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                      "llm.usage.prompt_tokens")
_COMPLETION_TOKEN_KEYS = ("llm.token_count.completion", "gen_ai.usage.output_tokens",
                          "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens")


def classify(span: Span) -> str:
    """llm | tool | agent | chain | other."""
    attrs = span.attrs
    oi = attrs.get("openinference.span.kind")
    if isinstance(oi, str):
        return _OI_KINDS.get(oi.upper(), "other")
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str):
        return _GENAI_OPS.get(op.lower(), "other")
    if "gen_ai.tool.name" in attrs or "tool.name" in attrs:
        return "tool"
    if any(k in attrs for k in _MODEL_KEYS) or "gen_ai.system" in attrs or "gen_ai.provider.name" in attrs:
        return "llm"
    return "other"


def _first(attrs: dict, keys: Iterable[str]) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value not in (None, ""):
            return value
    return None


def _int(value: Any) -> int:
    try:
        return min(MAX_COUNT, max(0, int(value)))
    except (TypeError, ValueError, OverflowError):
        return 0


def _maybe_json(value: Any) -> Any:
    """Tool arguments arrive as JSON text in both conventions; keep them structured."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            # Not JSON, nested past the shown depth, or an integer past 4,300 digits: kept as the text it is.
            return shown_json.parse(text, default=value)
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _oi_messages(attrs: dict, prefix: str) -> list[dict]:
    """OpenInference's flattened ``llm.*_messages.N.message.*`` attributes as message dicts."""
    messages: dict[int, dict] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        pos, _, rest = key[len(prefix):].partition(".")
        if not pos.isdigit() or not rest.startswith("message."):
            continue
        msg = messages.setdefault(int(pos), {"role": "", "content": "", "tool_call_id": "", "calls": {},
                                             "reasoning": "", "media": []})
        rest = rest[len("message."):]
        if rest == "role":
            msg["role"] = str(value)
        elif rest == "content":
            msg["content"] = _text(value)
        elif rest == "tool_call_id":
            msg["tool_call_id"] = str(value)
        elif rest.startswith("tool_calls."):
            cpos, _, part = rest[len("tool_calls."):].partition(".")
            call = msg["calls"].setdefault(int(cpos) if cpos.isdigit() else 0, {"id": "", "name": "", "arguments": None})
            if part == "tool_call.id":
                call["id"] = str(value)
            elif part == "tool_call.function.name":
                call["name"] = str(value)
            elif part == "tool_call.function.arguments":
                call["arguments"] = value
        elif rest == "function_call_name":
            msg["calls"].setdefault(0, {"id": "", "name": "", "arguments": None})["name"] = str(value)
        elif rest == "function_call_arguments_json":
            msg["calls"].setdefault(0, {"id": "", "name": "", "arguments": None})["arguments"] = value
    has_parts = any(".message.contents." in key for key in attrs if key.startswith(prefix))
    out = []
    for pos in sorted(messages):
        msg = messages[pos]
        out.append(msg)
        # Multi-part content (``message.contents.N.message_content.*``): text parts
        # join the content; reasoning parts are the thought; images and sounds
        # are kept as what they were, without their bytes.
        parts = _oi_parts(attrs, f"{prefix}{pos}.message.contents.") if has_parts else []
        for part in parts:
            kind, text = part["type"], part["text"]
            if kind in MEDIA_KINDS or part["media"]:
                msg["media"].append(_media(part["media"] or kind, url=part["url"], mime_type=part["mime_type"]))
            elif not text:
                continue
            elif kind == "reasoning":
                msg["reasoning"] = (msg["reasoning"] + "\n" + text).strip()
            elif not msg["content"]:
                msg["content"] = text
            elif text not in msg["content"]:  # some instrumentations record both forms
                msg["content"] += "\n" + text
        msg["calls"] = [msg["calls"][k] for k in sorted(msg["calls"])]
    return out


def _oi_parts(attrs: dict, prefix: str) -> list[dict[str, str]]:
    parts: dict[int, dict] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            pos, _, part = key[len(prefix):].partition(".")
            if pos.isdigit():
                slot = parts.setdefault(int(pos), {"type": "text", "text": "", "media": "", "url": "", "mime_type": ""})
                if part == "message_content.text":
                    slot["text"] = _text(value)
                elif part == "message_content.type":
                    slot["type"] = str(value)
                elif part.startswith("message_content."):
                    # message_content.image.image.url (OpenInference), and the audio equivalent.
                    media = part.split(".")[1]
                    slot["media"] = media if media in MEDIA_KINDS else slot["media"]
                    if part.endswith(".url"):
                        slot["url"] = _text(value)
                    elif part.endswith("mime_type"):
                        slot["mime_type"] = _text(value)
    return [parts[p] for p in sorted(parts)]


_CUT_RE = re.compile(r"… \[cut by agentlab: ([\d,]+) characters in all\]$")


def _sent_chars(text: str) -> int:
    """How long an attribute string was before _cap cut it."""
    cut = _CUT_RE.search(text)
    return int(cut[1].replace(",", "")) if cut else len(text)


def _media(kind: str, *, url: str = "", mime_type: str = "", data: str = "") -> dict[str, Any]:
    """An image or audio part of a traced message as a placeholder (tracing.core.model_calls.media_part)."""
    if url.startswith("data:"):
        header = url.partition(",")[0]
        return media_part(kind, mime_type=mime_type or header[5:].split(";", 1)[0],
                          inline_chars=_sent_chars(url) - len(header) - 1)
    return media_part(kind, url=url, mime_type=mime_type, inline_chars=_sent_chars(data) if data else 0)


def _genai_media(part: dict) -> dict[str, Any]:
    """GenAI's ``blob`` / ``uri`` / ``file`` parts (with a ``modality``), and the
    ``image`` / ``audio`` parts some instrumentations write instead."""
    kind = str(part.get("type"))
    modality = str(part.get("modality") or (kind if kind in MEDIA_KINDS else "file"))
    url = next((v for v in (part.get("uri"), part.get("url"), part.get("image_url")) if isinstance(v, str)), "")
    content = part.get("content")
    data = content if isinstance(content, str) else ""
    if not url and data.startswith(("data:", "http://", "https://")):
        url, data = data, ""
    return _media(modality, url=url, mime_type=_text(part.get("mime_type")), data=data)


def _genai_messages(value: Any) -> list[dict]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: JSON with typed parts."""
    value = _maybe_json(value)
    if not isinstance(value, list):
        return []
    out = []
    for raw in value:
        if not isinstance(raw, dict):
            continue
        msg = {"role": str(raw.get("role") or ""), "content": "", "tool_call_id": "", "calls": [], "reasoning": "",
               "status": "", "media": []}
        texts, thoughts = [], []
        parts = raw.get("parts")
        if isinstance(raw.get("content"), str):  # older, flat shape
            texts.append(raw["content"])
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(_text(part.get("content")))
            elif kind == "reasoning":
                thoughts.append(_text(part.get("content")))
            elif kind == "tool_call":
                msg["calls"].append({"id": str(part.get("id") or ""), "name": str(part.get("name") or ""),
                                     "arguments": part.get("arguments")})
            elif kind in ("blob", "uri", "file", *MEDIA_KINDS):
                msg["media"].append(_genai_media(part))
            elif kind == "tool_call_response":
                msg["tool_call_id"] = str(part.get("id") or "")
                if "response" not in part and "result" not in part:
                    msg["captured"] = False  # the id without the result: content capture is off
                response = part.get("response", part.get("result"))
                if isinstance(response, dict) and ("error" in response or response.get("status") == "error"):
                    msg["status"] = "error"
                texts.append(_text(response))
        msg["content"] = "\n".join(t for t in texts if t)
        msg["reasoning"] = "\n".join(t for t in thoughts if t)
        out.append(msg)
    return out


def _indexed_texts(attrs: dict, prefix: str, suffix: str) -> list[str]:
    found = {}
    for key, value in attrs.items():
        if key.startswith(prefix) and key.endswith(suffix):
            pos = key[len(prefix):-len(suffix)]
            if pos.isdigit():
                found[int(pos)] = _text(value)
    return [found[p] for p in sorted(found)]


def _message(role: str, content: str) -> dict:
    return {"role": role, "content": content, "tool_call_id": "", "calls": [], "reasoning": ""}


def _messages(attrs: dict, direction: str) -> list[dict]:
    found = _oi_messages(attrs, f"llm.{direction}_messages.")
    if found:
        return found
    found = _genai_messages(attrs.get(f"gen_ai.{direction}.messages"))
    if found:
        return found
    # Text completions (OpenInference: llm.prompts.N.prompt.text / llm.choices.N.completion.text).
    if direction == "input":
        return [_message("user", t) for t in _indexed_texts(attrs, "llm.prompts.", ".prompt.text")]
    found = [_message("assistant", t) for t in _indexed_texts(attrs, "llm.choices.", ".completion.text")]
    if found:
        return found
    # The openai-agents SDK (streamed, some versions) leaves only the
    # Responses-API object in output.value.
    response = payloads.response_message(attrs.get("output.value"))
    return [response] if response is not None and (response["content"] or response["calls"]) else []


# --- model calls ------------------------------------------------------------------

# Request parameters under the GenAI conventions, by the names chat APIs use.
_GENAI_PARAMS = {"gen_ai.request.temperature": "temperature", "gen_ai.request.max_tokens": "max_tokens",
                 "gen_ai.request.top_p": "top_p", "gen_ai.request.top_k": "top_k", "gen_ai.request.seed": "seed",
                 "gen_ai.request.stop_sequences": "stop", "gen_ai.request.frequency_penalty": "frequency_penalty",
                 "gen_ai.request.presence_penalty": "presence_penalty"}


def _chat_message(msg: dict) -> dict[str, Any]:
    """A mapper message dict in the chat API's shape, which the call panel shows."""
    out: dict[str, Any] = {"role": msg["role"] or "user",
                           "content": msg["content"] if msg["content"] or not msg["calls"] else None}
    if msg.get("media"):
        # The chat API's multi-part shape, so the call panel shows text and placeholders as for a native run.
        out["content"] = [*([{"type": "text", "text": msg["content"]}] if msg["content"] else []), *msg["media"]]
    if msg["reasoning"]:
        out["reasoning"] = msg["reasoning"]
    if msg["calls"]:
        out["tool_calls"] = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": (
            c["arguments"] if isinstance(c["arguments"], str) else _text(c["arguments"]))}} for c in msg["calls"]]
    if msg["tool_call_id"]:
        out["tool_call_id"] = msg["tool_call_id"]
    return out


def _call_params(attrs: dict) -> dict[str, Any]:
    params: dict[str, Any] = {}
    model = _first(attrs, ("gen_ai.request.model", *_MODEL_KEYS))
    if model is not None:
        params["model"] = _text(model)
    params.update({name: attrs[key] for key, name in _GENAI_PARAMS.items() if key in attrs})
    invocation = payloads.parse(attrs.get("llm.invocation_parameters"))
    if isinstance(invocation, dict):
        params.update(invocation)
    tools = [payloads.parse(t) for t in _indexed_texts(attrs, "llm.tools.", ".tool.json_schema")]
    tools = tools or payloads.parse(attrs.get("gen_ai.tool.definitions"))
    if tools and isinstance(tools, list):
        params["tools"] = tools
    template = {part: payloads.parse(attrs[f"llm.prompt_template.{part}"])
                for part in ("template", "variables", "version") if f"llm.prompt_template.{part}" in attrs}
    if template:
        params["prompt_template"] = template
    return params


def _call_response(attrs: dict, outputs: list[dict]) -> dict[str, Any] | None:
    # OpenInference's openai instrumentation keeps the endpoint's JSON as the
    # span's output: the raw response itself. Otherwise, the output messages
    # the span carried, in a chat response's shape.
    raw = payloads.parse(attrs.get("output.value")) if attrs.get("output.mime_type") == "application/json" else None
    if isinstance(raw, dict) and ("choices" in raw or raw.get("object") == "response"):
        return raw
    if not outputs:
        return None
    reasons = attrs.get("gen_ai.response.finish_reasons", attrs.get("llm.finish_reason"))
    reasons = [reasons] if isinstance(reasons, str) else reasons if isinstance(reasons, list) else []
    response: dict[str, Any] = {"choices": [
        {"index": i, "message": _chat_message(m), **({"finish_reason": reasons[i]} if i < len(reasons) else {})}
        for i, m in enumerate(outputs)]}
    if _first(attrs, ("gen_ai.response.id",)) is not None:
        response["id"] = _text(attrs["gen_ai.response.id"])
    if _first(attrs, ("gen_ai.response.model", "llm.model_name")) is not None:
        response["model"] = _text(_first(attrs, ("gen_ai.response.model", "llm.model_name")))
    return response


def call_record(span: Span, step_index: int, inputs: list[dict], outputs: list[dict]) -> ModelCallRecord | None:
    """The model call an LLM span describes, as far as it does; None when it
    carries neither messages, parameters nor token counts."""
    attrs = span.attrs
    params = _call_params(attrs)
    prompt_tokens = _int(_first(attrs, _PROMPT_TOKEN_KEYS))
    completion_tokens = _int(_first(attrs, _COMPLETION_TOKEN_KEYS))
    if not (inputs or outputs or set(params) - {"model"} or prompt_tokens or completion_tokens):
        return None
    prompts = _indexed_texts(attrs, "llm.prompts.", ".prompt.text")
    if prompts and not any(k.startswith("llm.input_messages.") for k in attrs) and "gen_ai.input.messages" not in attrs:
        api, messages = "completions", prompt_segments("".join(prompts))
    else:
        api, messages = "chat", [_chat_message(m) for m in inputs]
        system = payloads.parse(attrs.get("gen_ai.system_instructions"))
        if system and not any(m["role"] in ("system", "developer") for m in messages):
            parts = system if isinstance(system, list) else [system]
            text = "\n".join(_text(p.get("content")) if isinstance(p, dict) else _text(p) for p in parts)
            messages.insert(0, {"role": "system", "content": text})
    return ModelCallRecord(
        step_index=step_index, api=api, messages=messages, params=params, response=_call_response(attrs, outputs),
        error=(_cause(span) or "the model call failed") if span.status == "error" else "",
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_ms=span.duration_ms)


# The classic ReAct prompt ends with the newest observation: "Observation: ...\nThought:".
_PROMPT_TAIL_RE = re.compile(r"Observation:[ \t]*((?:(?!\nObservation:).)*?)\s*\nThought:\s*$", re.S)


# --- mapping ----------------------------------------------------------------------


@dataclass
class TraceState:
    """What mapping the next batch of a trace needs to know about the earlier ones."""

    next_index: int = 0
    # tool-call id -> [tool name, index of its action step], oldest first.
    open_calls: dict[str, list] = field(default_factory=dict)
    # Position (ns) of the latest step-producing span mapped: a later batch with
    # an earlier span means the steps must be re-derived in order.
    last_key: int = 0
    # Messages in the latest model call's input: the next call's new messages start here.
    seen_inputs: int = 0
    final: bool = False
    finished: bool = False
    outcome: str = ""  # finished | error, once the root span is in
    final_answer: str = ""
    synthetic_calls: int = 0
    # The latest model output with no tool call (a thought so far): the final
    # answer if nothing but the root's end follows it. -1: none pending.
    candidate: int = -1
    candidate_text: str = ""
    # Indices of thoughts stored by an earlier batch that became the final.
    promote: list[int] = field(default_factory=list)
    # Spans arrived out of order: steps wait for the root (or the trace
    # timeout) and are then derived once from every stored span, instead of
    # being re-derived on each late batch (which is quadratic in the trace).
    deferred: bool = False
    # Tool calls whose execute_tool span carried no result: the next model
    # call's input may hold it. call id -> [tool name, latency ms].
    awaiting: dict[str, list] = field(default_factory=dict)
    # When the latest batch arrived (Unix seconds): a trace whose root never
    # ends is closed INGEST_TRACE_TIMEOUT_S after it.
    seen_at: float = 0.0
    # Call ids of the latest actions that a tool span made on its own (no
    # model call had announced them): the model call, if it comes later, joins
    # them. Bounded: a call's model call comes within a few batches.
    tool_actions: list[str] = field(default_factory=list)
    # The trace's own outcome (`agentlab.success` on a span): None unless it says.
    success: bool | None = None
    # Span ids of LLM spans that hold an LLM span (the latest MAX_TOOL_ACTIONS):
    # wrappers, not model calls of their own.
    llm_parents: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TraceState:
        if not data:
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if known.get("outcome") == "succeeded":  # states stored before runs "finished"
            known["outcome"] = "finished"
        return cls(**known)


def order_key(span: Span, kind: str | None = None) -> int:
    # An agent / chain span speaks when it ends (its answer); every other span
    # when it starts. Sorting on this puts the run's final answer last.
    kind = kind or classify(span)
    return span.end_ns if kind in ("agent", "chain") else span.start_ns


def _tool_call_id(span: Span) -> str:
    return str(_first(span.attrs, ("gen_ai.tool.call.id", "tool_call.id")) or "")


def announced_calls(span: Span) -> list[str]:
    """The tool-call ids a model call's answer holds."""
    return [c["id"] for m in _messages(span.attrs, "output") for c in m["calls"] if c["id"]]


def ordered_spans(spans: Iterable[Span]) -> list[tuple[Span, str, int]]:
    """(span, kind, position) in the order they speak.

    A tool span that runs a call a model call made in the same batch is put
    right after that model call whatever the clocks say: both may start in
    the same millisecond (coarse clocks, exporters that round), or the tool
    span may even start first (clock skew between processes), and the call
    must still be one action followed by its result.
    """
    tagged = [(s, k, order_key(s, k)) for s in spans for k in (classify(s),)]
    by_call = {cid: i for i, (s, k, _) in enumerate(tagged) if k == "tool" and (cid := _tool_call_id(s))}
    after: dict[int, int] = {}  # tool span position in tagged -> its model call's key
    if by_call:
        for span, kind, key in tagged:
            if kind == "llm":
                for cid in announced_calls(span):
                    i = by_call.get(cid)
                    if i is not None and tagged[i][2] <= key:
                        after[i] = key
    order = sorted(range(len(tagged)), key=lambda i: (after.get(i, tagged[i][2]), i in after, tagged[i][0].start_ns,
                                                       tagged[i][0].span_id))
    return [(tagged[i][0], tagged[i][1], after.get(i, tagged[i][2])) for i in order]


def sort_spans(spans: Iterable[Span]) -> list[tuple[Span, str]]:
    return [(span, kind) for span, kind, _ in ordered_spans(spans)]


def produces_steps(span: Span, kind: str) -> bool:
    if kind == "llm":
        return not hollow_llm(span)
    return kind == "tool" or (kind in ("agent", "chain", "other") and not span.parent_id)


_MESSAGE_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "llm.prompts.", "llm.choices.")


def hollow_llm(span: Span) -> bool:
    """An LLM span whose recorded input or output holds no message, with no
    token counts, finish reason or failure: a framework method around the
    model call (LlamaIndex's ``_prepare_chat_with_tools``, the outer
    ``astream_chat``), not a call of its own. A call without content capture
    records no input.value / output.value at all, and stays a call."""
    attrs = span.attrs
    if "input.value" not in attrs and "output.value" not in attrs:
        return False
    if span.status == "error" or span.events or _first(
            attrs, (*_PROMPT_TOKEN_KEYS, *_COMPLETION_TOKEN_KEYS, "gen_ai.response.finish_reasons",
                    "llm.finish_reason")) is not None:
        return False
    if any(k.startswith(_MESSAGE_PREFIXES) or k in ("gen_ai.input.messages", "gen_ai.output.messages")
           for k in attrs):
        return False  # messages are there (the usual case): no need to read them twice
    return not (_messages(attrs, "input") or _messages(attrs, "output"))


@dataclass
class RunInfo:
    """Run-level fields a trace tells about itself."""

    model: str = ""
    agent: str = ""
    # True when the agent's name came from agent.name / gen_ai.agent.name (not
    # an agent span's name or the service): a later batch may name it better.
    agent_named: bool = False
    conversation_id: str = ""
    prompt: str = ""
    service: str = ""
    started_ns: int = 0
    prompt_from_root: bool = False
    system: str = ""  # the system prompt of the first model call


def describe(spans: Iterable[Span]) -> RunInfo:
    spans = list(spans)
    info = RunInfo()
    root_prompt = llm_prompt = ""
    span_agent = ""
    for span, kind in sort_spans(spans):
        attrs = span.attrs
        info.started_ns = min(info.started_ns or span.start_ns, span.start_ns)
        info.service = info.service or span.service
        if not info.model and kind == "llm":
            info.model = str(_first(attrs, _MODEL_KEYS) or "")
        if not info.agent_named:
            agent = _first(attrs, ("agent.name", "gen_ai.agent.name"))
            if agent is not None:
                info.agent, info.agent_named = str(agent), True
            elif kind == "agent" and not span_agent:
                span_agent = span.name
        if not info.conversation_id:
            info.conversation_id = str(_first(attrs, ("gen_ai.conversation.id", "session.id")) or "")
        if kind in ("agent", "chain") and not span.parent_id and _first(attrs, ("input.value",)) is not None:
            # The agent's own input is the task; a model call's user message may
            # be a whole ReAct prompt around it.
            # A structure the task cannot be read from (a framework's whole
            # workflow state) leaves the prompt to the model's first user message.
            root_prompt = payloads.known_task(attrs["input.value"]) or root_prompt
        elif kind == "llm" and not (llm_prompt and info.system):
            inputs = _messages(attrs, "input")
            users = [m["content"] for m in inputs if m["role"] == "user" and m["content"]]
            llm_prompt = llm_prompt or (users[0] if users else "")
            systems = [m["content"] for m in inputs if m["role"] in ("system", "developer") and m["content"]]
            info.system = info.system or (systems[0] if systems else "")
    if not info.system:
        instructions = next((s.attrs.get("gen_ai.system_instructions") for s in spans
                             if s.attrs.get("gen_ai.system_instructions")), None)
        if instructions is not None:
            parts = payloads.parse(instructions)
            info.system = "\n".join(_text(p.get("content")) for p in parts if isinstance(p, dict)) if isinstance(
                parts, list) else _text(instructions)
    info.prompt = root_prompt or llm_prompt
    info.prompt_from_root = bool(root_prompt)
    info.agent = info.agent or span_agent or info.service
    return info


def _finish_answer(args: Any) -> str:
    args = payloads.tool_args(args)
    if isinstance(args, dict):
        for key in ("answer", "final_answer", "result", "output"):
            if key in args:
                return _text(args[key])
        if len(args) == 1:
            return _text(next(iter(args.values())))
    return _text(args)


def _outcome(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _cause(span: Span) -> str:
    """Why a span failed: its status message, else its `exception` event (pydantic-ai records only that)."""
    return span.status_message or span.exception


def _stopped(attrs: dict) -> bool:
    """The model call ended with finish reason "stop" (not a tool call, not cut off)."""
    reasons = attrs.get("gen_ai.response.finish_reasons", attrs.get("llm.finish_reason"))
    if isinstance(reasons, str):
        reasons = [reasons]
    return isinstance(reasons, list) and "stop" in reasons


def _observation_status(text: str, status: str = "") -> str:
    if status == "error" or _ERROR_TEXT_RE.match(text or ""):
        return "error"
    return "ok"


class _Mapper:
    def __init__(self, state: TraceState) -> None:
        self.state = state
        self.steps: list[Step] = []
        self.calls: list[ModelCallRecord] = []

    def emit(self, kind: str, text: str = "", **fields: Any) -> Step:
        if fields.get("tool"):
            fields["tool"] = fields["tool"][:TOOL_CHARS]
        step = Step(index=self.state.next_index, kind=kind, text=text, **fields)
        self.state.next_index += 1
        self.steps.append(step)
        # Anything after a model's plain answer means it was not the last word.
        self.state.candidate = -1
        return step

    def open_call(self, call_id: str, tool: str, index: int) -> None:
        if not call_id:
            self.state.synthetic_calls += 1
            call_id = f"_{self.state.synthetic_calls}"
        self.state.open_calls[call_id] = [tool, index]

    def take_call(self, call_id: str, tool: str | None, *, fifo: bool) -> tuple[str, list] | None:
        """The open call a result answers: by id, else (when ``fifo``) the oldest open one of that tool."""
        calls = self.state.open_calls
        if call_id and call_id in calls:
            return call_id, calls.pop(call_id)
        if fifo or not call_id:
            for cid, (name, index) in calls.items():
                if tool is None or name == tool:
                    del calls[cid]
                    return cid, [name, index]
        return None

    def final(self, text: str, span: Span, **fields: Any) -> Step:
        self.state.final = True
        self.state.final_answer = text
        return self.emit("final", text, **fields)

    def call_steps(self, call: dict, span: Span, turn: list[Step]) -> None:
        name = call["name"] or "unknown"
        args = _maybe_json(call["arguments"])
        if name.lower() in FINISH_TOOLS:
            answer = _finish_answer(args)
            if answer not in ("", "{}", "null"):
                turn.append(self.final(answer, span, tool=name, args=payloads.tool_args(args),
                                       meta={"span_id": span.span_id}))
            # Else a bare "I am done" (DSPy's finish takes no arguments; a
            # last model call writes the answer): neither an action nor the answer.
            return
        shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        step = self.emit("action", f"{name}({shown})", tool=name, args=args,
                         meta={"span_id": span.span_id, **({"tool_call_id": call["id"]} if call["id"] else {})})
        turn.append(step)
        self.open_call(call["id"], name, step.index)

    def llm(self, span: Span) -> None:
        attrs = span.attrs
        inputs = _messages(attrs, "input")
        self.input_results(span, inputs)
        turn: list[Step] = []
        outputs = [payloads.field_message(m) for m in _messages(attrs, "output") if m["role"] in ("assistant", "")]
        self.output_steps(span, outputs, turn)
        meta = {"span_id": span.span_id}
        if span.status == "error":
            reason = _cause(span) or "the model call failed"
            turn.append(self.emit("error", reason, meta={"source": "model", "reason": reason, **meta}))
        if not turn:
            # Content capture is opt-in: the call still costs tokens and time.
            turn.append(self.emit("thought", "", meta={**meta, "content_captured": False}))
            if _stopped(attrs):
                # The model answered rather than called a tool: its (unseen) answer
                # is the final one if nothing but the root's end follows.
                self.state.candidate, self.state.candidate_text = turn[-1].index, ""
        first = turn[0]
        first.prompt_tokens = _int(_first(attrs, _PROMPT_TOKEN_KEYS))
        first.completion_tokens = _int(_first(attrs, _COMPLETION_TOKEN_KEYS))
        first.latency_ms = span.duration_ms
        model = _first(attrs, _MODEL_KEYS)
        if model:
            first.meta["model"] = str(model)[:200]
        call = call_record(span, first.index, inputs, outputs)
        if call is not None:
            self.calls.append(call)

    def input_results(self, span: Span, inputs: list[dict[str, Any]]) -> None:
        """Observations of earlier tool calls that a model call's input carries."""
        # Results of earlier tool calls arrive as the next call's tool-role
        # messages. Only messages past the previous call's input are new (the
        # history repeats every turn); a context that shrank (a sliding window)
        # falls back to "after the last assistant message". New results are
        # joined by tool-call id, else to the oldest open call: loops that
        # rebuild their context re-key the ids (agentlab's own loop does).
        if len(inputs) > self.state.seen_inputs:
            start = self.state.seen_inputs
        else:
            start = 1 + max((i for i, m in enumerate(inputs) if m["role"] == "assistant"), default=-1)
        self.state.seen_inputs = len(inputs)
        for msg in inputs[start:]:
            if msg["role"] != "tool":
                continue
            awaited = self.state.awaiting.pop(msg["tool_call_id"], None) if msg["tool_call_id"] else None
            if awaited is not None:
                tool, latency = awaited
                call_id = msg["tool_call_id"]
            else:
                taken = self.take_call(msg["tool_call_id"], None, fifo=True)
                if taken is None:
                    continue
                call_id, (tool, _index) = taken
                latency = 0.0
            meta = {"status": _observation_status(msg["content"], msg.get("status", "")), "source": "llm_input",
                    "span_id": span.span_id}
            if msg.get("captured") is False:
                meta["content_captured"] = False
            if not call_id.startswith("_"):
                meta["tool_call_id"] = call_id
            self.emit("observation", msg["content"], tool=tool, meta=meta, latency_ms=latency)
        self.flush_awaiting(span)
        # Text mode: the result of an action parsed from text is only in the
        # prompt, as its last "Observation:" block.
        text_calls = [cid for cid in self.state.open_calls if cid.startswith("_")]
        prompt = next((m["content"] for m in reversed(inputs) if m["role"] == "user"), "")
        tail = _PROMPT_TAIL_RE.search(prompt[-20000:]) if text_calls and prompt else None
        if tail:
            tool, _index = self.state.open_calls.pop(text_calls[0])
            self.emit("observation", tail.group(1), tool=tool,
                      meta={"status": _observation_status(tail.group(1)), "source": "prompt",
                            "span_id": span.span_id})

    def flush_awaiting(self, span: Span | None) -> None:
        """Tool results that neither their span nor the next model call carried (content not captured)."""
        for call_id, (tool, latency) in list(self.state.awaiting.items()):
            meta = {"status": "ok", "content_captured": False, "tool_call_id": call_id}
            if span is not None:
                meta["span_id"] = span.span_id
            self.emit("observation", "", tool=tool, meta=meta, latency_ms=latency)
        self.state.awaiting.clear()

    def output_steps(self, span: Span, outputs: list[dict[str, Any]], turn: list[Step]) -> None:
        """A model call's answer as steps: tool calls (native or parsed from text), a final, or a thought."""
        thought = "\n".join(t for m in outputs for t in (m["reasoning"], m["content"]) if t).strip()
        calls = [c for m in outputs for c in m["calls"]]
        meta = {"span_id": span.span_id}
        if calls:
            if thought:
                turn.append(self.emit("thought", thought, meta=meta))
            for call in calls:
                self.call_steps(call, span, turn)
            return
        if not thought and not any(m.get("media") for m in outputs):
            # Nothing but a role (an event logged without its content): as
            # though content capture were off, which it was.
            return
        final = _FINAL_RE.search(thought)
        action = _ACTION_RE.search(thought)
        if action and (final is None or action.start() < final.start()):
            before = _THOUGHT_RE.sub("", thought[: action.start()]).strip()
            if before:
                turn.append(self.emit("thought", before, meta=meta))
            self.call_steps({"id": "", "name": action.group(1), "arguments": action.group(2).strip()}, span, turn)
        elif final:
            before = _THOUGHT_RE.sub("", thought[: final.start()]).strip()
            if before:
                turn.append(self.emit("thought", before, meta=meta))
            turn.append(self.final(final.group(1).strip(), span, meta=meta))
        else:
            reasoning = "\n".join(m["reasoning"] for m in outputs if m["reasoning"]).strip()
            said = "\n".join(m["content"] for m in outputs if m["content"]).strip()
            if reasoning and said:
                # The reasoning is a thought; the answer alone may become the final.
                turn.append(self.emit("thought", reasoning, meta=meta))
                thought = said
            step = self.emit("thought", _THOUGHT_RE.sub("", thought), meta=meta)
            turn.append(step)
            if step.text:
                # A model output with no tool call is the answer if nothing but the
                # root's end follows (tools-mode agents end this way, finish
                # reason "stop"); until then it is a thought.
                self.state.candidate = step.index
                self.state.candidate_text = step.text

    def tool(self, span: Span) -> None:
        attrs = span.attrs
        # DSPy names a tool span after the method it wraps ("search.__call__").
        name = str(_first(attrs, ("tool.name", "gen_ai.tool.name")) or span.name.removesuffix(".__call__") or "unknown")
        # tool_arguments / tool_response: pydantic-ai's names before the conventions had theirs.
        raw_args = _first(attrs, ("gen_ai.tool.call.arguments", "input.value", "tool_arguments"))
        result = _first(attrs, ("gen_ai.tool.call.result", "output.value", "tool_response"))
        text, result_status, result_call_id = payloads.tool_result(result) if result is not None else ("", "", "")
        call_id = str(_first(attrs, ("gen_ai.tool.call.id", "tool_call.id")) or result_call_id or "")
        if name.lower() in FINISH_TOOLS and not (call_id and call_id in self.state.open_calls):
            # smolagents runs its final_answer tool after the model called it:
            # one answer, whether the call, the tool span or both are traced.
            if not self.state.final:
                self.call_steps({"id": call_id, "name": name, "arguments": raw_args}, span, [])
            return
        taken = self.take_call(call_id, name, fifo=False)
        if taken is None:
            if call_id:
                self.state.tool_actions = [*self.state.tool_actions[-(MAX_TOOL_ACTIONS - 1):], call_id]
            args = payloads.tool_args(raw_args)
            shown = "" if args is None else args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            self.emit("action", f"{name}({shown})", tool=name, args=args,
                      meta={"span_id": span.span_id, **({"tool_call_id": call_id} if call_id else {})})
        meta: dict[str, Any] = {"status": "error" if span.status == "error" or result_status == "error" else "ok",
                                "span_id": span.span_id}
        if call_id:
            meta["tool_call_id"] = call_id
        cause = _cause(span)
        if span.status == "error" and cause:
            # The instrumentation's status message, or else the standard
            # `exception` event, is often the only place the exception is named:
            # show it as the cause.
            meta["cause"] = cause
            if cause not in text:
                text = f"{text}\n{cause}".strip()
        if result is None and span.status != "error":
            if call_id:
                # GenAI spans without content: the next model call's input may carry the result.
                self.state.awaiting[call_id] = [name, span.duration_ms]
                return
            meta["content_captured"] = False
        elif meta["status"] == "ok":
            meta["status"] = _observation_status(text)
        self.emit("observation", text, tool=name, meta=meta, latency_ms=span.duration_ms)

    def root(self, span: Span) -> None:
        output = _first(span.attrs, ("output.value",))
        if output is None:
            outs = _genai_messages(span.attrs.get("gen_ai.output.messages"))
            output = "\n".join(m["content"] for m in outs if m["content"]) or None
        self.flush_awaiting(None)
        candidate = self.state.candidate
        if span.status == "error":
            reason = _cause(span) or f"span {span.name!r} ended with an error"
            self.emit("error", reason, meta={"source": "agent", "reason": reason, "span_id": span.span_id})
        elif not self.state.final:
            answer = payloads.answer_text(output).strip() if output is not None else ""
            if answer == "None":  # what smolagents records for a run that gave no answer
                answer = ""
            # The model's last plain answer is the final unless the agent
            # returned something else (a framework's post-processed output);
            # the same answer on the root is not stored twice.
            # An object's repr (LlamaIndex's StopEvent) is the framework's
            # wrapper around that answer, not a different one.
            if candidate >= 0 and (not answer or answer == self.state.candidate_text.strip()
                                   or payloads.is_object_repr(output)):
                self.promote(candidate)
            elif answer:
                self.final(answer, span, meta={"span_id": span.span_id, "source": span.name})
        self.state.finished = True
        self.state.outcome = "error" if span.status == "error" else "finished"

    def promote(self, index: int) -> None:
        """The pending thought at ``index`` is the run's final answer."""
        step = next((s for s in self.steps if s.index == index), None)
        if step is not None:
            step.kind = "final"
            text = step.text
        else:
            self.state.promote.append(index)  # stored by an earlier batch: the service updates it
            text = self.state.candidate_text
        self.state.final = True
        self.state.final_answer = text
        self.state.candidate = -1


def map_spans(spans: Iterable[Span], state: TraceState) -> list[Step]:
    """Steps for the spans of one trace, continuing from ``state`` (updated in place)."""
    return map_trace(spans, state)[0]


def map_trace(spans: Iterable[Span], state: TraceState) -> tuple[list[Step], list[ModelCallRecord]]:
    """map_spans, with the model calls the LLM spans describe (at their turn's first step)."""
    mapper = _Mapper(state)
    spans = list(spans)
    # An LLM span inside an LLM span is one model call (a framework's wrapper
    # around its client's call): the innermost speaks. Parents end after their
    # children, so a wrapper arrives in the same batch or a later one.
    inner = [s.parent_id for s in spans if s.parent_id and classify(s) == "llm" and not hollow_llm(s)]
    if inner:
        state.llm_parents = [*state.llm_parents, *inner][-MAX_TOOL_ACTIONS:]
    wrappers = set(state.llm_parents)
    for span, kind, key in ordered_spans(spans):
        said = _outcome(span.attrs.get(SUCCESS_ATTR))
        if said is not None:
            state.success = said
        if not produces_steps(span, kind) or (kind == "llm" and span.span_id in wrappers):
            continue
        state.last_key = max(state.last_key, key)
        if kind == "llm":
            mapper.llm(span)
        elif kind == "tool":
            mapper.tool(span)
        else:
            mapper.root(span)
    return mapper.steps, mapper.calls


def end_trace(state: TraceState) -> list[Step]:
    """Steps that end a trace whose root span never came (the trace timeout):
    tool results still awaited, and the pending answer promoted."""
    mapper = _Mapper(state)
    candidate = state.candidate
    mapper.flush_awaiting(None)
    if not state.final and candidate >= 0 and not mapper.steps:
        mapper.promote(candidate)
    state.finished = True
    state.outcome = state.outcome or "finished"
    return mapper.steps


def needs_rebuild(spans: Iterable[Span], state: TraceState) -> bool:
    """True when a new span belongs before steps already written."""
    spans = list(spans)
    if any(produces_steps(span, kind) and key < state.last_key for span, kind, key in ordered_spans(spans)):
        return True
    # A model call whose tool call an earlier batch's tool span already made
    # an action of (same millisecond, or the tool span sent first): the two
    # are one action, put in order once.
    return bool(state.tool_actions) and any(
        cid in state.tool_actions for span in spans if classify(span) == "llm" for cid in announced_calls(span))


def has_root(spans: Iterable[Span]) -> bool:
    """True when one of these spans ends the trace (a step-producing root)."""
    return any(not s.parent_id and produces_steps(s, k) and k != "llm" and k != "tool" for s, k in sort_spans(spans))
