"""Shared helpers for the agent tests (plain module, no fixtures magic)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import openai

from runs.agent.loop import AgentConfig, Budget, Outcome, run_agent
from runs.agent.sim_model import handle
from runs.agent.sim_server import httpx
from runs.agent.suite import get_task, load_documents
from runs.agent.tools import CorpusSearch, default_tools
from tracing.core.steps import Step

CLEAN = {"forget": 0.0, "rephrase": 0.0, "wrong_premise": 0.0, "early_finish": 0.0, "ignore_hint": 0.0}


def recording_sim_client(**knobs: float) -> tuple[openai.OpenAI, list[dict[str, Any]]]:
    """Like sim_client(), and keeps every request body for inspection."""
    bodies: list[dict[str, Any]] = []

    def transport(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read() or b"{}")
        body["sim"] = {**knobs, **(body.get("sim") or {})}
        bodies.append(body)
        status, payload = handle(request.method, request.url.path, json.dumps(body).encode())
        return httpx.Response(status, json=payload)

    http_client = httpx.Client(transport=httpx.MockTransport(transport))
    client = openai.OpenAI(api_key="sim", base_url="http://sim.invalid/v1", http_client=http_client, max_retries=0)
    return client, bodies


def run_task(
    slug: str,
    *,
    client: Any,
    mode: str = "tools",
    seed: int | None = 1,
    budget: Budget | None = None,
    text_api: str = "completions",
    **kwargs: Any,
) -> tuple[Outcome, list[Step]]:
    task = get_task(slug)
    assert task is not None
    steps: list[Step] = []
    config = AgentConfig(mode=mode, seed=seed, budget=budget or Budget(), text_api=text_api)
    tools = kwargs.pop("tools", None) or default_tools(CorpusSearch(load_documents()))
    outcome = run_agent(client=client, config=config, prompt=task["prompt"], tools=tools, sink=steps.append, **kwargs)
    return outcome, steps


def signature(steps: list[Step]) -> list[tuple[Any, ...]]:
    return [(s.index, s.kind, s.text, s.tool, json.dumps(s.args, sort_keys=True)) for s in steps]


class ScriptedClient:
    """Returns canned responses in order; records the request kwargs."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))
        self.completions = SimpleNamespace(create=self._create)

    def _create(self, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        return self.replies.pop(0)


def chat_reply(content: str | None = None, calls: list[tuple[str, str]] = (), usage: Any = None) -> Any:
    tool_calls = [
        SimpleNamespace(id=f"c{i}", type="function", function=SimpleNamespace(name=name, arguments=arguments))
        for i, (name, arguments) in enumerate(calls)
    ]
    message = SimpleNamespace(content=content, tool_calls=tool_calls or None)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def text_reply(text: str, usage: Any = None) -> Any:
    return SimpleNamespace(choices=[SimpleNamespace(text=text)], usage=usage)


def usage(prompt: int, completion: int) -> Any:
    return SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion)
