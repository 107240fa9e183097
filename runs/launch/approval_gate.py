"""The approval gate a run's execution is handed: how a run pauses on a writing
tool and resumes with a person's decision.

Launching knows only this shape; runs.approvals implements it and runs.apps
hands it over when the app is ready, the way the agent loop takes its hooks.
So launching imports nothing of approvals, and approvals may enqueue runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runs.agent.loop import ApprovalLookup


@dataclass(frozen=True)
class ApprovalGate:
    # The loop's lookup of the decisions for a run (None while none is taken).
    lookup: Callable[[int], ApprovalLookup]
    # Open the request for the run's paused action (called as the run pauses).
    open: Callable[[int], object]
    # Cancel the run's pending requests (a person stopped the paused run).
    cancel: Callable[[int], object]


def _no_decision(index: int) -> None:
    return None


# Before the approvals feature hands its gate over (a bare script): nothing is
# ever decided, so a run that pauses stays paused.
NO_APPROVALS = ApprovalGate(lookup=lambda run_id: _no_decision, open=lambda run_id: None, cancel=lambda run_id: None)

_current = [NO_APPROVALS]


def approval_gate_use(gate: ApprovalGate) -> None:
    """Hand launching the gate every execution uses (runs.apps.ready)."""
    _current[0] = gate


def approval_gate() -> ApprovalGate:
    return _current[0]
