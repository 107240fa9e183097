"""A run never dies of a context the product chose (issue 16, item 10).

The local Gemma 3 270M serves a 2,048-token window; ten searches of a long
page fill it. Against a scripted OpenAI-compatible server that counts tokens
its own way and refuses longer prompts as llama.cpp does, the loop fits every
prompt: older observations shortened first, then left out, and each turn that
had to says so on its first step."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import openai
import pytest

from runs.agent.loop import AgentConfig, Budget, run_agent
from runs.agent.tools import ToolRegistry, ToolResult, _schema
from tracing.core.steps import Step

WINDOW = 2048


def count_tokens(text: str) -> int:
    """Not the loop's estimate: words and single punctuation marks (about 4-5
    characters a token on English prose, fewer on numbers and markup)."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class WindowServer:
    """/v1/completions and /v1/chat/completions with a context of WINDOW tokens:
    a prompt that leaves no room for max_tokens is refused with llama.cpp's words."""

    def __init__(self, turns_before_answer: int) -> None:
        self.turns_before_answer = turns_before_answer
        self.prompts: list[int] = []
        self.refused = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read())
        prompt = body.get("prompt") or json.dumps(body.get("messages"), ensure_ascii=False)
        tokens = count_tokens(prompt)
        if tokens + body.get("max_tokens", 16) > WINDOW:
            self.refused += 1
            message = f"Requested tokens ({tokens + body.get('max_tokens', 16)}) exceed context window of {WINDOW}"
            return httpx.Response(400, json={"error": {"message": message, "type": "invalid_request_error"}})
        self.prompts.append(tokens)
        turn = len(self.prompts)
        text = (f" I need part {turn}.\nAction: search[part {turn} of the Lumen report]"
                if turn <= self.turns_before_answer else " I have every part.\nFinal Answer: 1,284 metres")
        usage = {"prompt_tokens": tokens, "completion_tokens": count_tokens(text), "total_tokens": tokens + 9}
        if request.url.path.endswith("/chat/completions"):
            call = re.search(r"search\[(.*)\]", text)
            message: dict[str, Any] = {"role": "assistant", "content": text.split("\n")[0].strip()}
            if call and turn <= self.turns_before_answer:
                message["tool_calls"] = [{"id": f"c{turn}", "type": "function", "function": {
                    "name": "search", "arguments": json.dumps({"query": call.group(1)})}}]
            else:
                message["content"] = "Final Answer: 1,284 metres"
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return httpx.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                             "choices": [choice], "usage": usage})
        return httpx.Response(200, json={"id": "x", "object": "text_completion", "created": 0, "model": "m",
                                         "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                                         "usage": usage})


class LongPages:
    """search: a different 1,500-character page for every query."""

    name, description, text_arg, side_effect = "search", "search the reports", "query", False
    parameters = _schema("query", "what to look for")

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        query = str(args.get("query", ""))
        sentence = f"The report on {query} lists spans, cables, 460 metres, 2009, the Sarne estuary. "
        return ToolResult((sentence * 20)[:1500])


def client_for(server: WindowServer) -> openai.OpenAI:
    http = httpx.Client(transport=httpx.MockTransport(server))
    return openai.OpenAI(api_key="x", base_url="http://local.invalid/v1", http_client=http, max_retries=0)


def run(server: WindowServer, *, mode: str = "text", context_tokens: int | None = WINDOW, history=()):
    steps: list[Step] = list(history)
    config = AgentConfig(mode=mode, model="gemma-3-270m", budget=Budget(max_steps=30, max_tokens=500_000),
                         context_tokens=context_tokens, text_api="completions")
    outcome = run_agent(client=client_for(server), config=config, prompt="How long is the Lumen Bridge?",
                        tools=ToolRegistry([LongPages()]), sink=steps.append, history=history)
    return outcome, steps


def test_an_unknown_window_is_learnt_from_the_refusal_and_the_run_goes_on():
    """The failure of issue 16 (the prompt outgrows the window after a few turns
    and the run ends in an error) on an endpoint whose window nobody set: its
    refusal names the size, and the loop fits every prompt from then on."""
    server = WindowServer(turns_before_answer=12)
    outcome, steps = run(server, context_tokens=None)
    assert outcome.status == "succeeded", outcome.reason
    assert server.refused == 1
    assert not [s for s in steps if s.kind == "error"]


@pytest.mark.parametrize("mode", ["text", "tools"])
def test_every_prompt_fits_the_window_and_the_run_answers(mode):
    server = WindowServer(turns_before_answer=12)
    outcome, steps = run(server, mode=mode)
    assert outcome.status == "succeeded", outcome.reason
    assert outcome.final_answer == "1,284 metres"
    assert server.refused == 0 and max(server.prompts) + 256 <= WINDOW
    trimmed = [s for s in steps if "context_cut" in s.meta]
    assert trimmed, "twelve 1,500-character pages cannot all fit 2,048 tokens"
    cut = trimmed[-1].meta["context_cut"]
    assert cut["limit"] == WINDOW and (cut["shortened"] or cut["left_out"])
    observations = [s.index for s in steps if s.kind == "observation"]
    # The newest observation is the one the next step needs: never left out.
    assert all(observations[-1] not in t.meta["context_cut"]["left_out"] for t in trimmed)
    # The oldest go first.
    assert cut["shortened"] + cut["left_out"] and min(cut["shortened"] + cut["left_out"]) == observations[0]
    # What was trimmed is marked on a step of the turn that had to (the run page shows it).
    assert all(t.kind in ("thought", "action", "final", "error") and t.prompt_tokens for t in trimmed)


def test_a_fork_of_a_long_run_fits_too():
    """A fork rebuilds its context from the parent's steps: twelve long pages in its history."""
    server = WindowServer(turns_before_answer=12)
    outcome, parent = run(server)
    assert outcome.status == "succeeded"
    history = [s for s in parent if s.index < parent[-1].index]  # fork before the answer
    fork_server = WindowServer(turns_before_answer=0)
    outcome, steps = run(fork_server, history=history)
    assert outcome.status == "succeeded", outcome.reason
    assert fork_server.refused == 0
    assert "context_cut" in steps[len(history)].meta


def test_a_shortened_observation_says_so_in_the_prompt():
    server = WindowServer(turns_before_answer=12)
    bodies: list[str] = []

    def spy(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.read())["prompt"])
        return server(httpx.Request(request.method, request.url, content=json.dumps(
            {"prompt": bodies[-1], "max_tokens": 256}).encode()))

    steps: list[Step] = []
    config = AgentConfig(mode="text", model="m", budget=Budget(max_steps=30, max_tokens=500_000),
                         context_tokens=WINDOW)
    http = httpx.Client(transport=httpx.MockTransport(spy))
    client = openai.OpenAI(api_key="x", base_url="http://local.invalid/v1", http_client=http, max_retries=0)
    run_agent(client=client, config=config, prompt="q", tools=ToolRegistry([LongPages()]), sink=steps.append)
    last = bodies[-1]
    assert "[shortened to fit the model's context: 1500 characters in full]" in last or \
        "[left out to fit the model's context]" in last
