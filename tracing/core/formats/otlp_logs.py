"""OTLP/HTTP log requests -> the GenAI events among them. Pure: no Django, no I/O.

An ``ExportLogsServiceRequest`` in protobuf or OTLP's JSON encoding becomes the
GenAI events it holds (tracing.core.formats.genai_events), each with the trace and
span it belongs to, or an :class:`~tracing.core.formats.otlp.OtlpError` naming the
offending field. Other log records are counted, not kept: agentlab reads
logs only for the model calls' messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracing.core.formats.genai_events import is_genai_event
from tracing.core.formats.otlp import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    OtlpError,
    _any_json,
    _any_pb,
    _attributes_json,
    _hex_id,
    _id_hex,
    _list,
    _obj,
    _uint,
)


@dataclass
class LogBatch:
    # {"trace_id", "span_id", "name", "time_ns", "attrs", "body"}, in request order.
    events: list[dict[str, Any]] = field(default_factory=list)
    not_genai: int = 0  # records that are not GenAI events
    unjoinable: int = 0  # GenAI events without the span they belong to

    @property
    def records(self) -> int:
        return len(self.events) + self.not_genai + self.unjoinable

    def add(self, *, trace_id: str, span_id: str, name: str, time_ns: int, attrs: dict, body: Any) -> None:
        if not is_genai_event(name):
            self.not_genai += 1
        elif not (trace_id and span_id):
            self.unjoinable += 1
        else:
            self.events.append({"trace_id": trace_id, "span_id": span_id, "name": name, "time_ns": time_ns,
                                "attrs": attrs, "body": body})

    def message(self) -> str:
        parts = []
        if self.unjoinable:
            parts.append(f"{self.unjoinable} GenAI event(s) carried no trace and span id and cannot be joined "
                         "to a model call")
        if self.not_genai:
            parts.append(f"{self.not_genai} log record(s) were not GenAI events (gen_ai.*.message, gen_ai.choice, "
                         "gen_ai.client.inference.operation.details) and were not stored")
        return "; ".join(parts)


def _event_name(declared: str, attrs: dict[str, Any]) -> str:
    # The record's own event_name (OTLP 1.5+), else the older `event.name` attribute.
    name = declared or attrs.pop("event.name", "")
    attrs.pop("event.name", None)
    return name if isinstance(name, str) else ""


def decode_protobuf(body: bytes) -> LogBatch:
    """The GenAI events of an ``application/x-protobuf`` ExportLogsServiceRequest."""
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    except ImportError as exc:
        raise OtlpError("this server cannot read protobuf OTLP (opentelemetry-proto is not installed); "
                        "send application/json") from exc
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        if "Depth" in str(exc):
            raise OtlpError("the protobuf body is nested too deeply (attribute values within values)") from exc
        raise OtlpError(f"the body is not an OTLP ExportLogsServiceRequest in protobuf: {exc}") from exc
    batch = LogBatch()
    for ri, rl in enumerate(request.resource_logs):
        for si, sl in enumerate(rl.scope_logs):
            for li, rec in enumerate(sl.log_records):
                where = f"resourceLogs[{ri}].scopeLogs[{si}].logRecords[{li}]"
                attrs = {kv.key: _any_pb(kv.value, f"{where}.attributes[{kv.key!r}]") for kv in rec.attributes}
                batch.add(
                    trace_id=_id_hex(rec.trace_id, TRACE_ID_BYTES, f"{where}.traceId", required=False),
                    span_id=_id_hex(rec.span_id, SPAN_ID_BYTES, f"{where}.spanId", required=False),
                    name=_event_name(rec.event_name, attrs), time_ns=rec.time_unix_nano or rec.observed_time_unix_nano,
                    attrs=attrs, body=_any_pb(rec.body, f"{where}.body") if rec.HasField("body") else None)
    return batch


def decode_json(data: Any) -> LogBatch:
    """The GenAI events of an ExportLogsServiceRequest in OTLP's JSON encoding (already parsed)."""
    root = _obj(data, "the body")
    batch = LogBatch()
    for ri, rl in enumerate(_list(root, "resourceLogs", "the body")):
        where_r = f"resourceLogs[{ri}]"
        rl = _obj(rl, where_r)
        for si, sl in enumerate(_list(rl, "scopeLogs", where_r)):
            where_s = f"{where_r}.scopeLogs[{si}]"
            sl = _obj(sl, where_s)
            for li, rec in enumerate(_list(sl, "logRecords", where_s)):
                where = f"{where_s}.logRecords[{li}]"
                rec = _obj(rec, where)
                attrs = _attributes_json(_list(rec, "attributes", where), f"{where}.attributes")
                name = rec.get("eventName", "")
                if not isinstance(name, str):
                    raise OtlpError(f"{where}.eventName must be a string")
                body = rec.get("body")
                batch.add(
                    trace_id=_hex_id(rec.get("traceId"), TRACE_ID_BYTES, f"{where}.traceId", required=False),
                    span_id=_hex_id(rec.get("spanId"), SPAN_ID_BYTES, f"{where}.spanId", required=False),
                    name=_event_name(name, attrs),
                    time_ns=(_uint(rec.get("timeUnixNano", 0), f"{where}.timeUnixNano")
                             or _uint(rec.get("observedTimeUnixNano", 0), f"{where}.observedTimeUnixNano")),
                    attrs=attrs, body=None if body is None else _any_json(body, f"{where}.body"))
    return batch
