"""DSPy (ReAct) + OpenInference's DSPy instrumentation + the SDK's OTLP
protobuf exporter, against a scripted model and a live agentlab: one row of
the framework table per variant."""

from __future__ import annotations

import json
import os

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

# LiteLLM reads its model list from the package, not from GitHub (read at import).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("dspy")
pytest.importorskip("openinference.instrumentation.dspy")

pytestmark = pytest.mark.django_db(transaction=True)


def _fields(**fields) -> tuple:
    """A reply in DSPy's ChatAdapter protocol, which ReAct parses its step from."""
    return ("text", "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]")


def _script(script: list) -> list:
    # ReAct picks each tool by name in text, ends with its `finish` tool, then
    # one more model call extracts the answer from the trajectory.
    steps = [_fields(next_thought=f"I should use {r[1]}.", next_tool_name=r[1], next_tool_args=json.dumps(r[2]))
             for r in script if r[0] == "call"]
    answer = script[-1][1]
    return [*steps, _fields(next_thought="I can answer now.", next_tool_name="finish", next_tool_args="{}"),
            _fields(reasoning="The trajectory has what I need.", answer=answer)]


def _run(live_server, user, script, requests: list):
    import dspy
    from openinference.instrumentation.dspy import DSPyInstrumentor

    def calculate(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return fw.calculate(expression)

    def search(query: str) -> str:
        """Search the documents."""
        return fw.search(query)

    with ScriptedModel(_script(script)) as model, fw.exporter_provider(live_server, user) as provider:
        instrumentor = DSPyInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            lm = dspy.LM("openai/scripted-model", api_base=model.url, api_key="test", cache=False)
            with dspy.context(lm=lm):
                return dspy.ReAct("question -> answer", tools=[calculate, search], max_iters=12)(
                    question=fw.TASK).answer
        finally:
            instrumentor.uninstrument()
            requests.extend(model.requests)


@pytest.mark.parametrize("variant", list(fw.VARIANTS))
def test_dspy_trace_arrives_whole(live_server, user, variant):
    requests: list = []
    assert _run(live_server, user, fw.VARIANTS[variant][0], requests) == fw.VARIANTS[variant][1]
    # The DSPy instrumentation records no token counts on its LM spans (the
    # model reported them; the span has no llm.token_count.*): nothing to compare.
    steps = fw.assert_table_row(fw.only_run(), variant, requests, tokens=False)
    # The thoughts as the model wrote them, not DSPy's field protocol around them.
    tools = [r[1] for r in fw.VARIANTS[variant][0] if r[0] == "call"]
    assert [s.text for s in steps if s.kind == "thought"] == [
        *(f"I should use {t}." for t in tools), "I can answer now.", "The trajectory has what I need."]
    assert not any("[[ ##" in s.text for s in steps)
