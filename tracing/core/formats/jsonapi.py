"""The JSON step API's request bodies: parse and validate, naming the bad field. Pure.

Validation is all-or-nothing per request: a body that fails here has written
nothing, so a client can fix it and resend the whole batch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from tracing.core import untrusted_json
from tracing.core.label_limits import LabelError, Labels, clean_labels
from tracing.core.steps import KINDS, MAX_TOOL_CHARS, ROLES, Step, TrajectoryError, parse_context

# Postgres `integer` columns (index, tokens).
MAX_INT = 2**31 - 1
# args / meta nested deeper than this are refused: real tool arguments are a
# few levels deep, and the detectors walk them recursively.
MAX_JSON_DEPTH = 32
# One request's worth: a client that sends more should split the batch (the
# Python client does); it bounds one transaction's lock time.
MAX_STEPS_PER_REQUEST = 20_000
MAX_RUNS_PER_REQUEST = 2_000
# How a run ended. "finished" is any end of the agent's own (its outcome is
# `success`); "stopped" a person's Stop; "error" the infrastructure failing.
FINISH_STATUSES = ("finished", "error", "stopped")
# The statuses of API version 1, still accepted: status and outcome in one word.
FINISH_ALIASES = {"succeeded": True, "failed": False}
# A run's context (system prompt, tool schemas) as JSON, at most: real ones are
# tens of kilobytes (tau2-bench's policy and 15 tool schemas: 24 KB); a
# context past a mebibyte is a document pasted by mistake, and every analysis
# of the run reads it.
MAX_CONTEXT_BYTES = 1024 * 1024

STEP_FIELDS = frozenset(
    {"index", "kind", "role", "text", "content", "tool", "args", "meta", "prompt_tokens", "completion_tokens",
     "latency_ms"}
)
RUN_FIELDS = frozenset(
    {"prompt", "model", "agent", "external_id", "conversation_id", "metadata", "context", "steps", "finish",
     "analyse", "tags", "session_id", "guard"}
)
# `guard` on a new run (tracing.store.guard): true -> "act", "observe" (shadow mode), false / absent -> not guarded.
GUARD_MODES = {True: "act", "act": "act", "observe": "observe", False: "", None: ""}
FINISH_FIELDS = frozenset({"status", "final_answer", "reason", "success"})


class ApiError(ValueError):
    """A request the API refuses; ``status`` is the HTTP status, the message names the problem."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def loads_strict(text: str | bytes, where: str = "the body", root: str = "body") -> Any:
    """JSON as Postgres takes it (tracing.core.untrusted_json); raises ApiError
    naming `where` (the whole text) or the path from `root` to the bad value."""
    try:
        return untrusted_json.loads(text, where=where, root=root)
    except untrusted_json.UntrustedJsonError as exc:
        raise ApiError(str(exc)) from exc


def load_json(raw: bytes) -> Any:
    return loads_strict(raw)


def _depth_ok(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return True


def _int(value: Any, where: str, *, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiError(f"{where} must be an integer, not {type(value).__name__}")
    if not 0 <= value <= MAX_INT:
        raise ApiError(f"{where} must be between 0 and {MAX_INT}")
    return value


def _str(value: Any, where: str, *, max_chars: int | None = None) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ApiError(f"{where} must be a string, not {type(value).__name__}")
    if max_chars is not None and len(value) > max_chars:
        raise ApiError(f"{where} is longer than {max_chars} characters")
    # Postgres text cannot hold NUL; tool output and pasted binaries do.
    return untrusted_json.clean_text(value)


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ApiError(f"{where} must be an object, not {type(value).__name__}")
    return value


def _unknown(obj: dict, allowed: frozenset[str], where: str) -> None:
    extra = obj.keys() - allowed
    if extra:
        raise ApiError(f"{where} has unknown field(s): {', '.join(sorted(extra))}")


def parse_step(raw: Any, where: str) -> Step:
    obj = _object(raw, where)
    if obj.keys() - STEP_FIELDS:
        _unknown(obj, STEP_FIELDS, where)
    if "index" not in obj:
        raise ApiError(f"{where}.index is missing")
    index = _int(obj["index"], f"{where}.index")
    kind = obj.get("kind")
    if kind not in KINDS:
        raise ApiError(f"{where}.kind must be one of {', '.join(KINDS)}")
    role = obj.get("role")
    if role is not None and role not in ROLES:
        raise ApiError(f"{where}.role must be one of {', '.join(ROLES)} (or absent: inferred from kind and tool)")
    text = _str(obj.get("text", obj.get("content")), f"{where}.text")
    tool = _str(obj.get("tool"), f"{where}.tool", max_chars=MAX_TOOL_CHARS) or None
    args = obj.get("args")
    if isinstance(args, (dict, list)) and not _depth_ok(args):
        raise ApiError(f"{where}.args is nested more than {MAX_JSON_DEPTH} levels deep")
    meta = obj.get("meta")
    if meta is None:
        meta = {}
    elif not isinstance(meta, dict):
        raise ApiError(f"{where}.meta must be an object, not {type(meta).__name__}")
    elif meta and not _depth_ok(meta):
        raise ApiError(f"{where}.meta is nested more than {MAX_JSON_DEPTH} levels deep")
    latency = obj.get("latency_ms", 0.0)
    if latency is None:
        latency = 0.0
    if not isinstance(latency, (int, float)) or isinstance(latency, bool) or not math.isfinite(latency) or latency < 0:
        raise ApiError(f"{where}.latency_ms must be a finite number >= 0")
    return Step(
        index=index,
        kind=kind,
        text=text,
        tool=tool,
        args=args,
        meta=meta,
        prompt_tokens=_int(obj.get("prompt_tokens"), f"{where}.prompt_tokens", default=0),
        completion_tokens=_int(obj.get("completion_tokens"), f"{where}.completion_tokens", default=0),
        latency_ms=float(latency),
        role=role,
    )


def parse_steps(raw: Any, where: str = "steps") -> list[Step]:
    """A batch of steps with strictly increasing indices (gaps allowed)."""
    if not isinstance(raw, list):
        raise ApiError(f"{where} must be an array of steps")
    if len(raw) > MAX_STEPS_PER_REQUEST:
        raise ApiError(f"{where} has {len(raw)} steps; send at most {MAX_STEPS_PER_REQUEST} per request", 413)
    steps = [parse_step(item, f"{where}[{i}]") for i, item in enumerate(raw)]
    for i in range(1, len(steps)):
        if steps[i].index <= steps[i - 1].index:
            problem = "repeats" if steps[i].index == steps[i - 1].index else "is lower than"
            raise ApiError(
                f"{where}[{i}].index {steps[i].index} {problem} {where}[{i - 1}].index {steps[i - 1].index}: "
                "indices in a batch must be strictly increasing"
            )
    return steps


@dataclass
class Finish:
    status: str  # one of FINISH_STATUSES
    final_answer: str = ""
    reason: str = ""
    success: bool | None = None


def parse_finish(raw: Any, where: str = "body") -> Finish:
    """The end of a run: `status` (default "finished") and the outcome `success`.

    "succeeded" / "failed" (API version 1) are read as "finished" with success
    true / false; an explicit `success` that contradicts them is refused.
    """
    obj = _object(raw, where)
    _unknown(obj, FINISH_FIELDS, where)
    status = obj.get("status", "finished")
    success = obj.get("success")
    if success is not None and not isinstance(success, bool):
        raise ApiError(f"{where}.success must be true, false or null")
    if not isinstance(status, str) or (status not in FINISH_STATUSES and status not in FINISH_ALIASES):
        raise ApiError(f"{where}.status must be one of {', '.join((*FINISH_STATUSES, *FINISH_ALIASES))}")
    if status in FINISH_ALIASES:
        implied = FINISH_ALIASES[status]
        if success is not None and success != implied:
            raise ApiError(f"{where}.status {status!r} contradicts {where}.success {str(success).lower()}: "
                           "send status 'finished' with the outcome in success")
        status, success = "finished", implied
    if status == "stopped" and success is not None:
        raise ApiError(f"{where}.success must be null for a stopped run: a Stop is not an outcome")
    return Finish(
        status=status,
        final_answer=_str(obj.get("final_answer"), f"{where}.final_answer"),
        reason=_str(obj.get("reason"), f"{where}.reason"),
        success=success,
    )


def check_context_size(context: dict[str, Any], where: str) -> None:
    """Refuse a context past MAX_CONTEXT_BYTES as JSON (or nested past MAX_JSON_DEPTH)."""
    if not context:
        return
    if not _depth_ok(context):
        raise ApiError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    size = len(json.dumps(context, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_CONTEXT_BYTES:
        raise ApiError(f"{where} is {size:,} bytes as JSON; the limit is {MAX_CONTEXT_BYTES:,} bytes "
                       "(a system prompt and tool schemas: put documents in the steps)", 413)


def parse_run_context(raw: Any, where: str) -> dict[str, Any]:
    """A run's `context`, validated by the one rule of the JSONL format and size-capped."""
    try:
        context = parse_context(raw)
    except TrajectoryError as exc:
        raise ApiError(f"{where}: {exc}") from exc
    check_context_size(context, where)
    return context


@dataclass
class RunRequest:
    prompt: str = ""
    model: str = ""
    agent: str = ""
    external_id: str = ""
    conversation_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    # Tags, flat metadata and the session, checked against tracing.core.label_limits' limits.
    labels: Labels = field(default_factory=Labels)
    context: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    finish: Finish | None = None
    analyse: bool = True
    guard: str = ""  # "act" | "observe" | "" (GUARD_MODES)

    @property
    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent": self.agent} if self.agent else {}
        if self.external_id:
            out["external_id"] = self.external_id
        if self.conversation_id:
            out["conversation_id"] = self.conversation_id
        if self.metadata:
            out["metadata"] = self.metadata
        return out


def parse_run(raw: Any, where: str = "body") -> RunRequest:
    obj = _object(raw, where)
    _unknown(obj, RUN_FIELDS, where)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ApiError(f"{where}.metadata must be an object")
    if metadata and not _depth_ok(metadata):
        raise ApiError(f"{where}.metadata is nested more than {MAX_JSON_DEPTH} levels deep")
    analyse = obj.get("analyse", True)
    if not isinstance(analyse, bool):
        raise ApiError(f"{where}.analyse must be true or false")
    conversation_id = _str(obj.get("conversation_id"), f"{where}.conversation_id", max_chars=200)
    guard = obj.get("guard")
    if not isinstance(guard, (bool, str, type(None))) or guard not in GUARD_MODES:
        raise ApiError(f"{where}.guard must be true, false or \"observe\"")
    try:
        # A conversation is a session: runs of one dialogue are listed together.
        labels = clean_labels(tags=obj.get("tags"), metadata=metadata,
                              session_id=obj.get("session_id") or conversation_id)
    except LabelError as exc:
        raise ApiError(f"{where}.{exc}") from exc
    return RunRequest(
        prompt=_str(obj.get("prompt"), f"{where}.prompt"),
        model=_str(obj.get("model"), f"{where}.model", max_chars=120),
        agent=_str(obj.get("agent"), f"{where}.agent", max_chars=200),
        external_id=_str(obj.get("external_id"), f"{where}.external_id", max_chars=200),
        conversation_id=conversation_id,
        metadata=metadata,
        labels=labels,
        context=parse_run_context(obj.get("context"), f"{where}.context"),
        steps=parse_steps(obj["steps"], f"{where}.steps") if obj.get("steps") is not None else [],
        finish=parse_finish(obj["finish"], f"{where}.finish") if obj.get("finish") is not None else None,
        analyse=analyse,
        guard=GUARD_MODES[guard],
    )


def parse_runs(raw: Any) -> list[RunRequest]:
    """``{"runs": [...]}`` (bulk) or a single run object."""
    obj = _object(raw, "body")
    if "runs" not in obj:
        return [parse_run(obj)]
    _unknown(obj, frozenset({"runs"}), "body")
    runs = obj["runs"]
    if not isinstance(runs, list) or not runs:
        raise ApiError("body.runs must be a non-empty array of runs")
    if len(runs) > MAX_RUNS_PER_REQUEST:
        raise ApiError(f"body.runs has {len(runs)} runs; send at most {MAX_RUNS_PER_REQUEST} per request", 413)
    parsed = [parse_run(item, f"runs[{i}]") for i, item in enumerate(runs)]
    total = sum(len(r.steps) for r in parsed)
    if total > MAX_STEPS_PER_REQUEST:
        raise ApiError(f"the request has {total} steps; send at most {MAX_STEPS_PER_REQUEST} per request", 413)
    return parsed
