"""The tools a stored run gets: the agent's tools over the Postgres corpus,
with the run's fault injection (if any) in front of them."""

from __future__ import annotations

from runs.agent.faults import FaultRates, with_faults
from runs.agent.tools import SendMessageTool, ToolRegistry, default_tools
from runs.core.models import Run, SandboxMessage
from runs.launch.agent_corpus import PostgresSearch


def build_tools(run: Run, *, guard=None) -> ToolRegistry:
    """`guard` wraps the search's query (the worker's retry through a database outage)."""
    # A new registry per run: the "times out once" state lives in the search tool.
    tools = default_tools(PostgresSearch(guard=guard))
    if writes(run):
        tools = ToolRegistry([*(tools.get(name) for name in tools.names), SendMessageTool(_deliver(run.pk))])
    return with_faults(tools, FaultRates.from_dict(run.settings.get("faults")), run.seed)


# The built-in suite's tasks that send something; a run can ask for the
# writing tools in its settings too.
WRITES_SUITE = "writes"


def writes(run: Run) -> bool:
    return bool(run.settings.get("write_tools")) or (run.task is not None and run.task.suite == WRITES_SUITE)


def _deliver(run_id: int):
    def deliver(tool: str, args: dict) -> str:
        return f"MSG-{SandboxMessage.objects.create(run_id=run_id, text=args['text']).pk}"

    return deliver
