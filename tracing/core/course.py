"""Did the agent change course after an intervention? (the watchdog's effect)

For each hint or redirect, compare the first action after it with the action
the intervention was about (the last action before it): another tool, or
arguments below CHANGED_BELOW similarity, is a change of course.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracing.core.normalize import action_key, jaccard
from tracing.core.steps import Step

# Similarity of normalised arguments below which the next call counts as a new
# approach; the repetition detector's default threshold, so "changed course"
# means exactly "would no longer count as a repeat".
CHANGED_BELOW = 0.8


def course_changes(steps: Sequence[Step]) -> dict[int, dict[str, Any]]:
    """intervention index -> {"changed", "before", "after", "similarity"}; only
    for hints and redirects followed by an action (a stop has no "after")."""
    out: dict[int, dict[str, Any]] = {}
    last_action: Step | None = None
    waiting: list[tuple[Step, Step | None]] = []
    for step in sorted(steps, key=lambda s: s.index):
        if step.kind == "intervention" and (step.meta or {}).get("tier") in ("hint", "redirect"):
            waiting.append((step, last_action))
        elif step.kind in ("action", "final"):
            for intervention, before in waiting:
                entry: dict[str, Any] = {"after": step.index, "before": before.index if before else None}
                if step.kind == "final":
                    entry.update(changed=True, similarity=None, finished=True)
                elif before is None:
                    entry.update(changed=True, similarity=None)
                else:
                    tool_a, args_a = action_key(before.tool, before.args)
                    tool_b, args_b = action_key(step.tool, step.args)
                    sim = jaccard(args_a, args_b) if tool_a == tool_b else 0.0
                    entry.update(changed=sim < CHANGED_BELOW, similarity=round(sim, 3))
                out[intervention.index] = entry
            waiting = []
            if step.kind == "action":
                last_action = step
    return out
