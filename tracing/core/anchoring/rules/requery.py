"""requery: an action re-issued whose answer the agent already had.

Agents lose track of what they already know: the search whose page is still
in the context is run again, the lookup that failed is retried unchanged and
fails the same way, the room just left is walked back into to do nothing.
With nothing in between that could have changed the world (a write of
another tool, a user's turn), the second call asks a question already
answered: the agent is no longer reading its own history.

Evidence: ``strength.EVIDENCE["requery"]`` ("answered before", strong); a
call that passes no arguments, or a write that worked done again, is
``EVIDENCE["state_reread"]`` (weak: reading the state again is checking).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracing.core.anchoring.common import Break, args_text, call_text, no_arguments, quote, step_text
from tracing.core.normalize import jaccard, tokens
from tracing.core.results import is_move_call, move_place
from tracing.core.steps import Step

if TYPE_CHECKING:
    from tracing.core.anchoring.state import RunState

NAME = "requery"

# A re-issued request "got the same answer" when the two observations' salient
# units overlap this much: near-identical. A paginated Lookup, or a room
# revisited after taking something from it, differs by at least one unit.
SAME_RESULT_MIN_JACCARD = 0.95


def is_revisit(brk: Break) -> bool:
    """A return to a place seen before: held until the agent's next call."""
    return brk.pattern == NAME and "place" in brk.evidence


def on_result(state: RunState, step: Step, text: str) -> list[Break]:
    """The result of a call that repeats an earlier one, compared with the earlier result."""
    if state.requery_pair is None or state.last is None:
        return []
    action, earlier, read = state.requery_pair
    if earlier.obs is None or jaccard(state.last.sal.units, earlier.obs_units) < SAME_RESULT_MIN_JACCARD:
        return []
    if not read and not earlier.failed and (
        not (step.text or "").strip()  # a silent write done twice asks nothing
        or " ".join((step.text or "").split()) != " ".join((earlier.obs.text or "").split())
    ):
        return []
    if earlier.failed:
        reason = (
            f"the action at step {action.index} repeats step {earlier.step.index}, which had failed "
            f"({quote(earlier.obs.text or '', 60)}), and fails the same way"
        )
    else:
        reason = (
            f"the action at step {action.index} asks again what step {earlier.step.index} already "
            f"obtained (observation at step {earlier.obs.index}: {quote(earlier.obs.text or '', 80)})"
        )
    evidence = {
        "action": quote(step_text(action), 80),
        "earlier_action_step": earlier.step.index,
        "earlier_observation_step": earlier.obs.index,
        "earlier_failed": bool(earlier.failed),
    }
    if not earlier.failed and (not read or no_arguments(action)):
        # A write that worked, done again ("craft 1 wool" twice, a second item
        # into the cart), makes another one; a call that asks nothing
        # ("inventory", "get_status({})") reads the state of the world, and
        # agents read it again to check. Worth a look, not proof.
        evidence["probe"] = True
    if not earlier.failed and is_move_call(action.tool, action.args):
        # Going back to a place seen before is a requery only if the agent
        # does nothing there: coming back to put the pencil down is not.
        place = move_place(args_text(action.args) or action.text or "")
        evidence["place"] = " ".join(tokens(place))
    return [Break(step=action.index, pattern=NAME, reason=reason, evidence=evidence)]


def on_call(state: RunState, step: Step, text: str) -> list[Break]:
    """The call after a revisit: another move, or nothing done with the place, makes it a requery."""
    held = state.revisit
    if held is None:
        return []
    args = call_text(step)
    if is_move_call(step.tool, args) or held.evidence["place"] not in " ".join(tokens(args)):
        return [held]
    return []


def on_end(state: RunState, step: Step | None, text: str) -> list[Break]:
    """The run ended at the revisited place, doing nothing there."""
    return [state.pending_move] if state.pending_move is not None else []
