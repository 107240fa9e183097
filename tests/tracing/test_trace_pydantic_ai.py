"""pydantic-ai with its own OpenTelemetry instrumentation (GenAI conventions,
no logfire) + the SDK's OTLP protobuf exporter, against a scripted model and a
live agentlab: one row of the framework table per variant."""

from __future__ import annotations

import pytest

from tests.scripted_model import ScriptedModel
from tests.tracing import frameworks as fw

pytest.importorskip("pydantic_ai")

pytestmark = pytest.mark.django_db(transaction=True)

INSTRUCTIONS = "You are a careful calculator agent."


def _run(live_server, user, script, requests: list, *, retry: bool = True):
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with ScriptedModel(script) as model, fw.exporter_provider(live_server, user) as provider:
        Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
        try:
            agent = Agent(OpenAIChatModel("scripted-model", provider=OpenAIProvider(base_url=model.url,
                                                                                     api_key="test")),
                          instructions=INSTRUCTIONS)

            @agent.tool_plain
            def calculate(expression: str) -> str:
                """Evaluate an arithmetic expression."""
                try:
                    return fw.calculate(expression)
                except RuntimeError as exc:
                    # pydantic-ai's way for a tool to tell the model it failed
                    # (any other exception ends the run).
                    if retry:
                        raise ModelRetry(str(exc)) from exc
                    raise

            @agent.tool_plain
            def search(query: str) -> str:
                """Search the documents."""
                return fw.search(query)

            return agent.run_sync(fw.TASK).output
        finally:
            Agent.instrument_all(False)
            requests.extend(model.requests)


@pytest.mark.parametrize("variant", list(fw.VARIANTS))
def test_pydantic_ai_trace_arrives_whole(live_server, user, variant):
    requests: list = []
    assert _run(live_server, user, fw.VARIANTS[variant][0], requests) == fw.VARIANTS[variant][1]
    fw.assert_table_row(fw.only_run(), variant, requests)


def test_a_tool_that_raises_ends_the_run_and_its_cause_is_the_observation(live_server, user):
    # Not ModelRetry: pydantic-ai ends the run, and the exception is named
    # only in the tool span's standard `exception` event.
    requests: list = []
    with pytest.raises(RuntimeError, match=fw.ERROR):
        _run(live_server, user, fw.ERRORED, requests, retry=False)
    run = fw.only_run()
    steps = fw.steps_of(run)
    assert [s.kind for s in steps][:2] == ["action", "observation"] and "final" not in fw.kinds(steps)
    obs = fw.assert_error_observation(steps)
    assert obs.text == f"RuntimeError: {fw.ERROR}", obs.text
    assert run.status == run.Status.ERROR and steps[-1].kind == "error", (run.status, fw.kinds(steps))
