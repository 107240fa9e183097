"""LlamaIndex (FunctionAgent) + OpenInference's llama-index instrumentation +
the SDK's OTLP protobuf exporter, against a scripted model and a live agentlab:
one row of the framework table per variant."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

# LiteLLM reads its model list from the package, not from GitHub (read at import).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("llama_index.core.agent.workflow")
pytest.importorskip("openinference.instrumentation.llama_index")

pytestmark = pytest.mark.django_db(transaction=True)


def _llm(kind: str, url: str):
    if kind == "openai_like":
        # The usual client (three nested LLM spans a request, token counts
        # from the stream). Not in the dev extra: it needs openai<3, which the
        # openai-agents SDK cannot have; the row runs where it is installed.
        openai_like = pytest.importorskip("llama_index.llms.openai_like")
        return openai_like.OpenAILike(model="scripted-model", api_base=url, api_key="test", is_chat_model=True,
                                      is_function_calling_model=True)
    litellm = pytest.importorskip("litellm")
    llm_litellm = pytest.importorskip("llama_index.llms.litellm")
    # LiteLLM knows a model it has never heard of can call tools only when told.
    litellm.register_model({"openai/scripted-model": {
        "supports_function_calling": True, "max_input_tokens": 128_000, "litellm_provider": "openai",
        "mode": "chat", "input_cost_per_token": 0, "output_cost_per_token": 0}})
    return llm_litellm.LiteLLM(model="openai/scripted-model", api_base=url, api_key="test")


def _run(live_server, user, script, requests: list, llm_kind: str):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return fw.calculate(expression)

    def search(query: str) -> str:
        """Search the documents."""
        return fw.search(query)

    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        instrumentor = LlamaIndexInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            llm = _llm(llm_kind, model.url)
            agent = FunctionAgent(tools=[FunctionTool.from_defaults(calculate), FunctionTool.from_defaults(search)],
                                  llm=llm, system_prompt="You are a careful calculator agent.")

            async def run():
                return await agent.run(fw.TASK, max_iterations=20)

            return str(asyncio.run(run()))
        finally:
            instrumentor.uninstrument()
            requests.extend(model.requests)


@pytest.mark.parametrize("llm_kind", ["litellm", "openai_like"])
@pytest.mark.parametrize("variant", list(fw.VARIANTS))
def test_llama_index_trace_arrives_whole(live_server, user, variant, llm_kind):
    requests: list = []
    assert _run(live_server, user, fw.VARIANTS[variant][0], requests, llm_kind) == fw.VARIANTS[variant][1]
    # LiteLLM's stream carries no usage to the instrumentation (and asking for
    # it breaks llama-index-llms-litellm's stream), so its spans have no token
    # counts; the model is the one LiteLLM was told, provider prefix and all.
    fw.assert_table_row(fw.only_run(), variant, requests, tokens=llm_kind == "openai_like",
                        model="scripted-model" if llm_kind == "openai_like" else "openai/scripted-model")
