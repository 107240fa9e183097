"""Slips: a lapse the environment caught at once and the agent let go.

"Now I find an apple (1)." about a countertop that holds none, then ``take
apple 1 from countertop 3`` answered "Nothing happens.", then the agent
searches on and never names apple 1 again until a result shows one. The
thought was ungrounded, but the very next result put the agent back on what
is there, and it followed. The anchor break marks where reasoning stopped
tracking the observations; here it tracked them again one result later, so
the lapse is shown as a finding (``slip``) and the break, if any, is a later
one. A lapse the agent keeps acting on ("Now I find a cloth (1)" three times),
or that nothing refuted, stays a break; so does a re-query, whose failure is
the lapse itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from tracing.core.steps import Step

# Lapses about one named value (an object, an id, an option) that a call then
# acts on: the only kind a failed call can refute.
SLIP_PATTERNS = ("unobserved_argument", "unconfirmed_success")


def _names(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


def _plain(text: str) -> str:
    """Lower case, "a cd (3)" spelt as the command spells it ("cd 3")."""
    return _COUNTED_RE.sub(r"\1 \2", text.lower())


_COUNTED_RE = re.compile(r"([a-z]+) \((\d+)\)")


def _call_text(step: Step) -> str:
    args = step.args if isinstance(step.args, str) else json.dumps(step.args, ensure_ascii=False, default=str)
    return f"{step.tool or ''} {args} {step.text or ''}".lower()


def _values(evidence: dict[str, Any]) -> list[str]:
    named = evidence.get("unseen") or evidence.get("missing") or []
    return [v.lower() for v in named if isinstance(v, str) and v.strip()]


def caught(
    steps: Sequence[Step],
    pattern: str,
    at: int,
    evidence: dict[str, Any],
    failed: Callable[[Step, Step], bool],
    claims: Callable[[str], list[str]],
) -> dict[str, Any] | None:
    """Where the lapse at step ``at`` was refuted and dropped, or None if it was not a slip.

    ``steps`` are in index order; ``failed(result, call)`` says whether a tool
    result reports a failed call; ``claims(text)`` gives the sentences of a
    text that assert something (not plans, questions or guesses).
    """
    values = _values(evidence)
    if pattern not in SLIP_PATTERNS or not values:
        return None
    pos = next((i for i, s in enumerate(steps) if s.index == at), None)
    if pos is None:
        return None
    # The call that acts on the lapse: the step itself, or the next one after thoughts.
    call_pos = pos
    while call_pos < len(steps) and steps[call_pos].kind != "action":
        if steps[call_pos].kind != "thought":
            return None
        call_pos += 1
    if call_pos + 1 >= len(steps):
        return None
    call, result = steps[call_pos], steps[call_pos + 1]
    used = [v for v in values if _names(_call_text(call), v)]
    if not used or result.kind != "observation" or not failed(result, call):
        return None
    later = steps[call_pos + 2:]
    # Back on track: a later call works. Guesses refuted one after another
    # ("go to diningtable 1", 2, 3: "Nothing happens.") and then a call that
    # works is exploration the environment corrected; a run that never gets
    # a call to work again never came back.
    pairs = zip(later, later[1:], strict=False)
    if not any(a.kind == "action" and b.kind == "observation" and not failed(b, a) for a, b in pairs):
        return None
    # Dropped: until a result shows the value, no call acts on it and no
    # statement asserts it ("Now I take a cd (3)."). Planning to check it ("I
    # need to check the knife (1) is in the countertop 2") follows the
    # refutation rather than ignoring it.
    for step in later:
        if step.kind == "observation":
            if any(_names((step.text or "").lower(), v) for v in used):
                break
        elif step.kind == "action":
            if any(_names(_call_text(step), v) for v in used):
                return None
        elif any(_names(_plain(step.text or ""), v) for v in used) and any(
                _names(_plain(c), v) for c in claims(step.text or "") for v in used):
            return None  # sentences are split only for a step that names the value at all
    return {"call_step": call.index, "refuted_at": result.index, "values": used}
