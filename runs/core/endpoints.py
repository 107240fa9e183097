"""Model endpoints for a run: every provider goes through the openai client."""

from __future__ import annotations

import os
from functools import cache

import openai
from django.conf import settings

from runs.agent.loop import AgentConfig, Budget
from runs.core.models import Run
from runs.core.prices import price_of


class EndpointNotConfigured(Exception):
    pass


def endpoint_for(run: Run) -> tuple[str, str, str]:
    """(base_url, api_key, model name) for a run."""
    if run.provider == Run.Provider.SIM:
        return run.base_url or settings.SIM_BASE_URL, "sim", "sim"
    if run.provider == Run.Provider.LOCAL:
        return run.base_url or settings.LOCAL_MODEL_BASE_URL, "local", run.model_name or settings.LOCAL_MODEL_NAME
    if run.provider == Run.Provider.OPENAI:
        base_url = run.base_url or settings.OPENAI_BASE_URL
        if not base_url:
            raise EndpointNotConfigured("no OPENAI_BASE_URL is set and the run names no base URL")
        return base_url, settings.OPENAI_API_KEY or "none", run.model_name
    raise EndpointNotConfigured(f"runs of provider {run.provider!r} are not executed by agentlab")


@cache
def _http_client(pid: int) -> openai.DefaultHttpxClient:
    # A new HTTP client loads the CA bundle into a fresh SSL context, about
    # 20 ms: a quarter of a simulated run's whole cost (bench/evaluation.py).
    # One per process, shared by its runs (the client is thread-safe); keyed
    # on the pid so a forked worker child never uses its parent's sockets.
    return openai.DefaultHttpxClient()


def client_for(run: Run) -> openai.OpenAI:
    base_url, api_key, _ = endpoint_for(run)
    # Retries would hide a dead endpoint for minutes; the loop reports the error
    # as a step and the run ends `error` instead.
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=settings.MODEL_REQUEST_TIMEOUT_S,
                         http_client=_http_client(os.getpid()))


def config_for(run: Run) -> AgentConfig:
    _, _, model = endpoint_for(run)
    extra_body = None
    if run.provider == Run.Provider.SIM:
        extra_body = {"sim": run.settings.get("sim", {})}
    # The local model is a base model: it runs text mode through the completions
    # endpoint. Hosted chat models take text mode through chat completions.
    text_api = "chat" if run.provider == Run.Provider.OPENAI else "completions"
    return AgentConfig(
        mode=run.mode,
        model=model,
        temperature=run.temperature,
        seed=run.seed,
        budget=Budget(max_steps=run.max_steps, max_tokens=run.max_tokens,
                      max_seconds=run.settings.get("max_seconds"),
                      max_cost=float(run.max_cost) if run.max_cost is not None else None),
        request_timeout=settings.MODEL_REQUEST_TIMEOUT_S,
        text_api=text_api,
        extra_body=extra_body,
        # The local server's window is known; another endpoint's is learnt
        # from its refusal of a prompt too long (runs.agent.loop).
        context_tokens=settings.LOCAL_MODEL_CONTEXT_TOKENS if run.provider == Run.Provider.LOCAL else None,
        # Fixed at the start: the budget a run was given does not move when a price is edited mid-run.
        price=price_of(run.provider, model),
    )
