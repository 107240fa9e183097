"""The step record shared by the agent loop, the detectors and the importers.

Plain Python on purpose: the loop, the detectors and ``python -m tracing.detect``
run without Django. The recorder maps a ``Step`` onto ``tracing.store.models.Step``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Kinds of step, in the order a ReAct turn produces them. "intervention" is the
# watchdog speaking; "error" is output that did not parse, a model error, etc.
KINDS = ("thought", "action", "observation", "final", "intervention", "error")

# Observation statuses (DESIGN.md, observation governance). A timeout is a
# failed call, never "not found".
STATUSES = ("ok", "empty", "error", "timeout")
# The statuses of a call that failed.
FAILED_STATUSES = ("error", "timeout")

TIERS = ("hint", "redirect", "stop")

# Who speaks in a step (DESIGN §3, "a step says what it is"). ``kind`` says what
# the step does (thought, action, observation...); ``role`` says whose words
# it carries, so a detector can judge each step by it:
# - assistant: the agent's own output (thoughts, tool calls, answers, replies);
# - tool:      a tool's or the environment's result (data, empty, error);
# - user:      a person's (or user simulator's) turn in a dialogue;
# - system:    a system prompt, domain policy or developer note met mid-run;
# - watchdog:  an intervention of agentlab's runtime watchdog.
ROLES = ("assistant", "tool", "user", "system", "watchdog")

# Tool names that carry a user's turn as an observation ("user" in the
# tau2-bench export; "human" in LangChain's HumanInputRun; OpenAI's role names).
USER_TOOLS = frozenset({"user", "human", "customer", "ask_user", "human_input"})

# Pseudo-tools through which an agent talks to the user in a dialogue rather
# than acting on the world (tau-bench's ``respond``, AutoGen's ``send_message``).
# Their argument is a message, judged as the agent's words, not as a query.
REPLY_TOOLS = frozenset({"respond", "reply", "send_message", "message_user", "say", "talk_to_user"})

# Run-level context keys (what the agent was told before its first step).
CONTEXT_KEYS = ("system", "tools")
# What the step table holds: index is a Postgres integer, tool a varchar(120).
MAX_INDEX = 2**31 - 1
MAX_TOOL_CHARS = 120
# An integer reward past this cannot become a float (the outcome compares one).
_LARGEST_FLOAT = int(sys.float_info.max)


@dataclass
class Step:
    index: int
    kind: str
    text: str = ""
    tool: str | None = None
    # A dict for function calls, a string for text-mode tools (``Search[x]``).
    args: Any = None
    # Observation metadata (status, source, parse method, trust, class...),
    # intervention evidence (detector, tier, evidence, policy), error reason.
    meta: dict[str, Any] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    # One of ROLES, or None to infer it from kind and tool (``role_of``).
    role: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def role_of(step: Step) -> str:
    """The step's role: the one it was given, else inferred from kind and tool.

    Inference is what keeps files in the original JSONL format (no ``role``)
    working: an observation from the ``user`` tool is the user's turn.
    """
    if step.role in ROLES:
        return step.role  # type: ignore[return-value]
    if step.kind == "intervention":
        return "watchdog"
    if step.kind == "observation":
        return "user" if (step.tool or "").strip().lower() in USER_TOOLS else "tool"
    return "assistant"


def is_reply(step: Step) -> bool:
    """The agent addressing the user (a dialogue turn), not calling a tool."""
    return step.kind == "action" and (step.tool or "").strip().lower() in REPLY_TOOLS


def context_text(context: dict[str, Any] | None) -> str:
    """The run's context as plain text (system prompt, then tool schemas as JSON):
    what the agent was told, and so evidence for what it says."""
    if not context:
        return ""
    parts = []
    system = context.get("system")
    if isinstance(system, str) and system.strip():
        parts.append(system)
    tools = context.get("tools")
    if tools:
        parts.append(json.dumps(tools, ensure_ascii=False, default=str))
    return "\n".join(parts)


@dataclass
class Intervention:
    """What a watchdog decides after a step; the loop records it as a step."""

    detector: str
    tier: str  # one of TIERS
    message: str  # what the model is told (hint / redirect) or the fallback reason
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trajectory:
    """One run in the JSONL format of ``shared/eval/README.md``."""

    run_id: str
    task: str
    steps: list[Step]
    source: str = ""
    success: bool | None = None
    reward: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # What the agent was told before its first step: {"system": str, "tools": [...]}.
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def goal(self) -> str:
        """The task as the agent was shown it: the task text, plus the
        environment's opening description when a source records one (ALFWorld)."""
        opening = self.meta.get("initial_observation") if isinstance(self.meta, dict) else None
        return f"{self.task}\n{opening}" if isinstance(opening, str) and opening else self.task


def parse_context(raw: Any) -> dict[str, Any]:
    """Validate a run-level ``context``; raises TrajectoryError naming the field."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TrajectoryError("'context' must be an object with 'system' and/or 'tools'")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in CONTEXT_KEYS:
            raise TrajectoryError(f"context.{key}: unknown field (known: {', '.join(CONTEXT_KEYS)})")
        if value is None:
            continue
        if key == "system" and not isinstance(value, str):
            raise TrajectoryError("context.system must be a string")
        if key == "tools" and not isinstance(value, list):
            raise TrajectoryError("context.tools must be a list of tool definitions")
        out[key] = value
    return out


class TrajectoryError(ValueError):
    """A JSONL line that is not a trajectory; the message names the problem."""


def trajectory_from_dict(data: Any) -> Trajectory:
    if not isinstance(data, dict):
        raise TrajectoryError("a line must be a JSON object")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list):
        raise TrajectoryError("'steps' must be a list")
    steps = []
    for pos, raw in enumerate(raw_steps):
        if not isinstance(raw, dict):
            raise TrajectoryError(f"steps[{pos}] must be an object")
        index = raw.get("index", pos)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= MAX_INDEX:
            raise TrajectoryError(f"steps[{pos}].index must be an integer from 0 to {MAX_INDEX}")
        kind = raw.get("kind")
        if kind not in KINDS:
            raise TrajectoryError(f"steps[{pos}].kind must be one of {', '.join(KINDS)}")
        content = raw.get("content", raw.get("text", ""))
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise TrajectoryError(f"steps[{pos}].content must be a string")
        tool = raw.get("tool")
        if tool is not None and not isinstance(tool, str):
            raise TrajectoryError(f"steps[{pos}].tool must be a string or null")
        if tool is not None and len(tool) > MAX_TOOL_CHARS:
            raise TrajectoryError(f"steps[{pos}].tool is longer than {MAX_TOOL_CHARS} characters")
        meta = raw.get("meta") or {}
        if not isinstance(meta, dict):
            raise TrajectoryError(f"steps[{pos}].meta must be an object")
        role = raw.get("role")
        if role is not None and role not in ROLES:
            raise TrajectoryError(f"steps[{pos}].role must be one of {', '.join(ROLES)} (or absent)")
        steps.append(Step(index=index, kind=kind, text=content, tool=tool, args=raw.get("args"), meta=meta, role=role))
    indices = [s.index for s in steps]
    if len(set(indices)) != len(indices):
        raise TrajectoryError("step indices must be unique")
    steps.sort(key=lambda s: s.index)
    run_id = data.get("run_id")
    if not isinstance(run_id, (str, int)) or run_id == "":
        raise TrajectoryError("'run_id' is required")
    meta = data.get("meta") or {}
    if not isinstance(meta, dict):
        raise TrajectoryError("'meta' must be an object")
    success = data.get("success")
    if success is not None and not isinstance(success, bool):
        raise TrajectoryError("'success' must be true, false or null")
    reward = data.get("reward")
    if reward is not None and (not isinstance(reward, (int, float)) or isinstance(reward, bool)):
        raise TrajectoryError("'reward' must be a number or null")
    if isinstance(reward, int) and abs(reward) > _LARGEST_FLOAT:
        raise TrajectoryError("'reward' is too large a number")
    task = data.get("task", "")
    if not isinstance(task, str):
        raise TrajectoryError("'task' must be a string")
    context = parse_context(data.get("context"))
    return Trajectory(
        run_id=str(run_id),
        task=task,
        steps=steps,
        source=str(data.get("source") or ""),
        success=success,
        reward=reward,
        meta=meta,
        context=context,
    )


def read_jsonl(path: str | Path) -> Iterator[Trajectory]:
    """Yield trajectories; raises TrajectoryError naming the line number."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrajectoryError(f"line {lineno}: not JSON ({exc.msg})") from exc
            try:
                yield trajectory_from_dict(data)
            except TrajectoryError as exc:
                raise TrajectoryError(f"line {lineno}: {exc}") from exc


def recorded_status(meta: dict[str, Any] | None) -> str | None:
    """The status the recorder gave an observation (``meta["status"]``, one of
    STATUSES); None when it gave none, or one that is not a status."""
    status = (meta or {}).get("status")
    return status if isinstance(status, str) and status in STATUSES else None
