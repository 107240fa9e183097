"""A guarded LangGraph ReAct agent, from the hooks around each model call:

    from tracing.adapters.langgraph_guard import LangGraphGuard

    guard = LangGraphGuard(Client())                     # or guard="observe": shadow mode
    agent = create_react_agent(model, tools, **guard.hooks())
    try:
        agent.invoke({"messages": [("user", task)]})
    except StopRun as stop:                              # the watchdog stopped the loop
        ...

Before each model call (``pre_model_hook``) the tool results since the last
call are sent, and the hints and redirects received so far are placed where
they arrived in the messages the model is given (``llm_input_messages``: the
graph's state is left as it is). After each model call (``post_model_hook``)
its thought and tool calls are sent, so a stop of a dead call comes before
the tool runs; a reply without tool calls is the Final and finishes the run.
A stop raises StopRun out of ``invoke``.
"""

from __future__ import annotations

import json
from typing import Any

try:
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - the optional dependency
    raise ImportError("tracing.adapters.langgraph_guard needs langgraph (pip install langgraph)") from exc

from tracing.client import Client, RunRecorder, StopRun


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


class LangGraphGuard:
    """pre_model_hook / post_model_hook for ``create_react_agent`` that record the run and act on the watchdog."""

    def __init__(self, client: Client, *, guard: bool | str = True, **run_fields: Any) -> None:
        self.client, self.guard, self.run_fields = client, guard, run_fields
        self.run: RunRecorder | None = None
        self.seen = 0  # state messages already sent
        self.notes: list[tuple[int, BaseMessage]] = []  # (messages before it, the note)

    def hooks(self) -> dict[str, Any]:
        return {"pre_model_hook": self.pre_model_hook, "post_model_hook": self.post_model_hook}

    def pre_model_hook(self, state: dict) -> dict:
        messages = list(state["messages"])
        if self.run is None:
            task = next((_text(m.content) for m in messages if isinstance(m, HumanMessage)), "")
            self.run = self.client.run(task, guard=self.guard, agent="langgraph", **self.run_fields)
            self.seen = len(messages)
        self._send(messages[self.seen:])
        self.seen = len(messages)
        hint = self.run.pending_hint()
        if hint:
            self.notes.append((len(messages), HumanMessage(content=f"[watchdog] {hint}", name="watchdog")))
        given: list[BaseMessage] = []
        for i, message in enumerate(messages):
            given.append(message)
            given.extend(note for at, note in self.notes if at == i + 1)
        return {"llm_input_messages": given}

    def post_model_hook(self, state: dict) -> dict:
        messages = list(state["messages"])
        self._send(messages[self.seen:])
        self.seen = len(messages)
        return {}

    def _send(self, messages: list[BaseMessage]) -> None:
        run = self.run
        assert run is not None
        try:
            for message in messages:
                if isinstance(message, ToolMessage):
                    status = "error" if getattr(message, "status", "success") == "error" else "ok"
                    run.observation(_text(message.content), tool=message.name, status=status)
                elif isinstance(message, AIMessage):
                    self._model_turn(run, message)
        except StopRun:
            run.finish("stopped", reason="stopped by the watchdog")
            raise

    def _model_turn(self, run: RunRecorder, message: AIMessage) -> None:
        usage = message.usage_metadata or {}
        tokens = {"prompt_tokens": usage.get("input_tokens", 0), "completion_tokens": usage.get("output_tokens", 0)}
        text = _text(message.content).strip()
        if not message.tool_calls:
            run.final(text, **tokens)
            run.finish("finished")
            return
        if text:
            run.thought(text, **tokens)
            tokens = {}
        for call in message.tool_calls:
            run.action(call["name"], call["args"], **tokens)
            tokens = {}
