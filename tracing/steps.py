"""The step record shared by the agent loop, the detectors and the importers.

Plain Python on purpose: the loop, the detectors and ``python -m tracing.detect``
run without Django. The recorder maps a ``Step`` onto ``tracing.models.Step``.
"""

from __future__ import annotations

import json
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

TIERS = ("hint", "redirect", "stop")


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise TrajectoryError(f"steps[{pos}].index must be a non-negative integer")
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
        meta = raw.get("meta") or {}
        if not isinstance(meta, dict):
            raise TrajectoryError(f"steps[{pos}].meta must be an object")
        steps.append(Step(index=index, kind=kind, text=content, tool=tool, args=raw.get("args"), meta=meta))
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
    task = data.get("task", "")
    if not isinstance(task, str):
        raise TrajectoryError("'task' must be a string")
    return Trajectory(
        run_id=str(run_id),
        task=task,
        steps=steps,
        source=str(data.get("source") or ""),
        success=success,
        reward=reward,
        meta=meta,
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
