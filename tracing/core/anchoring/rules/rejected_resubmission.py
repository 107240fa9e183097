"""rejected_resubmission: a solution submitted again unchanged after the
environment rejected it.

An agent that has lost track of the feedback it got sends the same answer
back, as if the rejection had not been read: the environment said no, and
the next submission is word for word (up to white space) the one it refused.

Evidence: ``strength.EVIDENCE["rejected_resubmission"]`` ("repeated after
rejection", strong).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracing.core.anchoring.common import Break, is_final, normal, quote
from tracing.core.steps import Step

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "rejected_resubmission"


def check(state: RunState, step: Step, text: str) -> list[Break]:
    earlier = state.rejected.get(normal(step)) if state.rejected else None
    if earlier is None:
        return []
    action, result = earlier
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the submission at step {step.index} is the one step {action.index} made, which the environment "
        f"rejected at step {result.index} ({quote(result.text or '', 60)}); it was sent again unchanged"
    ), evidence={"earlier_submission_step": action.index, "rejection_step": result.index,
                 "rejection": quote(result.text or "", 120)})]


def on_call(state: RunState, step: Step, text: str) -> list[Break]:
    """A submitting call (finish, submit, answer...)."""
    return check(state, step, text) if is_final(step) else []
