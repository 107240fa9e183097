"""A guarded smolagents agent, from its step callbacks:

    from tracing.adapters.smolagents_guard import SmolagentsGuard

    guard = SmolagentsGuard(Client())                    # or guard="observe": shadow mode
    agent = ToolCallingAgent(tools=..., model=..., step_callbacks=[guard])
    try:
        agent.run(task)
    except StopRun as stop:                              # the watchdog stopped the loop
        ...

Each finished action step is sent as it ends (its thought, tool calls and
their results); a hint or a redirect is appended to the step's observations,
which smolagents shows the model in its next prompt; a stop raises StopRun out
of ``agent.run``. The run is created at the first step, with the agent's task
as its prompt, and finished at the final answer (or when the stop is raised).
"""

from __future__ import annotations

from typing import Any

try:
    from smolagents.memory import ActionStep
except ImportError as exc:  # pragma: no cover - the optional dependency
    raise ImportError("tracing.adapters.smolagents_guard needs smolagents (pip install smolagents)") from exc

from tracing.client import Client, RunRecorder, StopRun

# The tool smolagents ends a run with: its call is the run's Final.
FINAL_TOOL = "final_answer"


class SmolagentsGuard:
    """A smolagents step callback that records the run and acts on the watchdog."""

    def __init__(self, client: Client, *, guard: bool | str = True, **run_fields: Any) -> None:
        self.client, self.guard, self.run_fields = client, guard, run_fields
        self.run: RunRecorder | None = None

    def __call__(self, step: Any, agent: Any = None) -> None:
        if not isinstance(step, ActionStep):
            return
        if self.run is None:
            model = getattr(getattr(agent, "model", None), "model_id", "") or ""
            self.run = self.client.run(getattr(agent, "task", "") or "", guard=self.guard, model=model,
                                       agent=type(agent).__name__ if agent is not None else "smolagents",
                                       **self.run_fields)
        try:
            self._record(self.run, step)
        except StopRun:
            self.run.finish("stopped", reason="stopped by the watchdog")
            raise
        hint = self.run.pending_hint()
        if hint:
            # The step's observations are what the model reads next.
            step.observations = f"{step.observations or ''}\n\n[watchdog] {hint}".strip()

    def _record(self, run: RunRecorder, step: Any) -> None:
        usage = getattr(step, "token_usage", None)
        tokens = {"prompt_tokens": getattr(usage, "input_tokens", 0) or 0,
                  "completion_tokens": getattr(usage, "output_tokens", 0) or 0}
        text = step.model_output if isinstance(step.model_output, str) else ""
        calls = list(step.tool_calls or [])
        if text.strip() and not (len(calls) == 1 and calls[0].name == FINAL_TOOL):
            run.thought(text.strip(), **tokens)
            tokens = {}
        for call in calls:
            if call.name == FINAL_TOOL:
                answer = step.action_output if step.action_output is not None else call.arguments
                run.final(str(answer.get("answer", answer) if isinstance(answer, dict) else answer), **tokens)
                run.finish("finished")
                return
            run.action(call.name, call.arguments, **tokens)
            tokens = {}
        if step.error is not None and calls:
            run.observation(str(step.error), tool=calls[-1].name, status="error")
        elif calls:
            run.observation(str(step.observations or ""), tool=calls[-1].name)
        elif step.error is not None:
            run.error(str(step.error), **tokens)
