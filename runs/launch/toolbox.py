"""The tools a stored run gets: the agent's tools over the Postgres corpus,
with the run's fault injection (if any) in front of them."""

from __future__ import annotations

from runs.agent.faults import FaultRates, with_faults
from runs.agent.tools import ToolRegistry, default_tools
from runs.launch.models import Run
from runs.launch.search import PostgresSearch


def build_tools(run: Run, *, guard=None) -> ToolRegistry:
    """`guard` wraps the search's query (the worker's retry through a database outage)."""
    # A new registry per run: the "times out once" state lives in the search tool.
    tools = default_tools(PostgresSearch(guard=guard))
    return with_faults(tools, FaultRates.from_dict(run.settings.get("faults")), run.seed)
