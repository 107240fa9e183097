"""Reads for the run page's waterfall and span tree (tracing.core.waterfall draws them).

Each is two queries at most and reads only the columns and JSON keys it
draws: a span's payload can hold a megabyte of messages, and a step's text
is not needed to place its bar.
"""

from __future__ import annotations

from django.db import models
from django.db.models.fields.json import KT

from tracing.core.formats.otlp import Span, classify
from tracing.core.steps import FAILED_STATUSES
from tracing.core.waterfall import Call, SpanRow
from tracing.store.models import IngestedSpan, Step

# Runs whose steps are written as their calls return: created_at is when the
# call ended. Other sources' steps are written when they arrive or are imported.
NATIVE_SOURCE = "agentlab"
MODEL_KINDS = ("thought", "action", "final", "error")
# The attributes tracing.core.formats.otlp.classify reads to tell a model call from a tool call.
KIND_KEYS = ("openinference.span.kind", "gen_ai.operation.name", "gen_ai.tool.name", "tool.name", "llm.model_name",
             "gen_ai.response.model", "gen_ai.request.model", "gen_ai.system", "gen_ai.provider.name")


def has_spans(run: models.Model) -> bool:
    return IngestedSpan.objects.filter(trace__run_id=run.pk).exists()


def span_rows(run: models.Model) -> list[SpanRow]:
    """The run's OTLP spans (kind classified as the ingestion did) with the first step each became."""
    keys = {f"a{i}": KT(f"payload__attrs__{key}") for i, key in enumerate(KIND_KEYS)}
    rows = (IngestedSpan.objects.filter(trace__run_id=run.pk)
            .annotate(sid=KT("payload__span_id"), pid=KT("payload__parent_id"), sname=KT("payload__name"),
                      start=KT("payload__start_ns"), end=KT("payload__end_ns"), sstatus=KT("payload__status"), **keys)
            .values("sid", "pid", "sname", "start", "end", "sstatus", *keys))
    steps: dict[str, int] = {}
    for index, span_id in (Step.objects.filter(run_id=run.pk, meta__has_key="span_id")
                           .order_by("index").values_list("index", KT("meta__span_id"))):
        steps.setdefault(span_id, index)
    out = []
    for r in rows:
        attrs = {key: r[f"a{i}"] for i, key in enumerate(KIND_KEYS) if r[f"a{i}"] is not None}
        probe = Span(trace_id="", span_id=r["sid"] or "", parent_id="", name="", start_ns=0, end_ns=0, attrs=attrs)
        out.append(SpanRow(span_id=r["sid"] or "", parent_id=r["pid"] or "", name=r["sname"] or "",
                           kind=classify(probe), start_ns=_int(r["start"]), end_ns=_int(r["end"]),
                           status=r["sstatus"] or "unset", step=steps.get(r["sid"] or "")))
    return out


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def _call_of_span(row: SpanRow) -> Call | None:
    if row.kind not in ("llm", "tool"):
        return None
    kind = "model" if row.kind == "llm" else "tool"
    return Call(index=row.step, kind=kind, label=row.name or kind, duration_ms=row.duration_ms,
                start_ms=row.start_ns / 1e6 if row.start_ns else None, error=row.status == "error")


def run_calls(run: models.Model) -> tuple[list[Call], str]:
    """The run's model and tool calls in order, and where their timing comes from ("spans" | "steps" | "durations")."""
    if run.source != NATIVE_SOURCE:
        spans = span_rows(run)
        if spans:
            calls = [c for c in map(_call_of_span, sorted(spans, key=lambda s: (s.start_ns, s.span_id))) if c]
            return calls, "spans"
    steps = (Step.objects.filter(run_id=run.pk).filter(models.Q(kind="observation") | models.Q(kind__in=MODEL_KINDS))
             .order_by("index").values_list("index", "kind", "tool", "latency_ms", "created_at", KT("meta__status"),
                          "prompt_tokens", "completion_tokens"))
    timed = run.source == NATIVE_SOURCE
    calls = []
    for index, kind, tool, latency, created, status, prompt, completion in steps:
        if kind == "observation":
            calls.append(Call(index, "tool", tool or "tool", latency, _start(created, latency) if timed else None,
                              error=status in FAILED_STATUSES))
        elif latency or prompt or completion:  # a model turn's cost is on its first step only
            calls.append(Call(index, "model", "model", latency, _start(created, latency) if timed else None,
                              error=kind == "error"))
    return calls, "steps" if timed else "durations"


def _start(created, latency_ms: float) -> float:
    return created.timestamp() * 1000 - latency_ms
