"""The tools a stored run gets: the agent's tools over the Postgres corpus."""

from __future__ import annotations

from runs.agent.tools import ToolRegistry, default_tools
from runs.models import Run
from runs.search import PostgresSearch


def build_tools(run: Run) -> ToolRegistry:
    return default_tools(PostgresSearch())
