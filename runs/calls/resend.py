"""Send a stored model call again, edited or not, to any configured model.

Synchronous, bounded by REPLAY_TIMEOUT_S, and recorded nowhere: a replay is a
question the user asks while reading a run ("what would it answer to this?"),
waited for on the page like a playground request. A Celery task would add a
queue, a result store and a poll for one HTTP request whose answer is shown
once and belongs to no run; a model that hangs costs one web thread for at
most the timeout.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import openai

from runs.core.endpoints import EndpointNotConfigured, endpoint_for
from runs.core.models import Run
from runs.core.prices import PriceTable

# A replay waits at most this long for the model (the page is waiting too).
REPLAY_TIMEOUT_S = 30.0


@dataclass
class ReplayResult:
    model: str
    response: dict[str, Any] | None = None
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost: float = 0.0


def make_client(base_url: str, api_key: str) -> openai.OpenAI:
    """The client a replay talks through (tests put the in-process sim here)."""
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=REPLAY_TIMEOUT_S)


def call_replay(*, provider: str, model_name: str, api: str, messages: list[dict[str, Any]],
                params: dict[str, Any], tools: list[dict[str, Any]] | None) -> ReplayResult:
    """Send `messages` (chat) or their joined prompt (completions) to the model;
    endpoint and transport errors come back in `error`, never raised."""
    try:
        base_url, api_key, model = endpoint_for(Run(provider=provider, model_name=model_name))
    except EndpointNotConfigured as exc:
        return ReplayResult(model=model_name, error=f"model endpoint not configured: {exc}")
    common: dict[str, Any] = {"model": model, "timeout": REPLAY_TIMEOUT_S}
    for key in ("temperature", "max_tokens", "seed", "stop"):
        if params.get(key) is not None:
            common[key] = params[key]
    if provider == Run.Provider.SIM and params.get("extra_body"):
        common["extra_body"] = params["extra_body"]
    client = make_client(base_url, api_key)
    started = time.perf_counter()
    try:
        if api == "completions" and provider != Run.Provider.OPENAI:
            prompt = "".join(str(m.get("content", "")) for m in messages)
            response = client.completions.create(prompt=prompt, **common)
        else:
            if api == "completions":
                # Hosted chat models take text mode through chat completions (runs.core.endpoints).
                messages = [{"role": "user", "content": "".join(str(m.get("content", "")) for m in messages)}]
            if tools and api == "chat":
                common["tools"] = tools
            response = client.chat.completions.create(messages=messages, **common)
    except openai.APITimeoutError:
        return ReplayResult(model=model, error=f"the model did not answer within {REPLAY_TIMEOUT_S:g} s")
    except openai.APIConnectionError as exc:
        return ReplayResult(model=model, error=f"cannot reach the model endpoint {base_url}: {exc}")
    except openai.APIStatusError as exc:
        return ReplayResult(model=model, error=f"the model endpoint answered HTTP {exc.status_code}: {exc.message}")
    latency = (time.perf_counter() - started) * 1000
    usage = getattr(response, "usage", None)
    prompt_tokens = getattr(usage, "prompt_tokens", None) or 0
    completion_tokens = getattr(usage, "completion_tokens", None) or 0
    price = PriceTable.load().price_for(provider, model)
    return ReplayResult(model=model, response=response.model_dump(mode="json", exclude_unset=True),
                        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, latency_ms=latency,
                        cost=price.cost(prompt_tokens, completion_tokens))

