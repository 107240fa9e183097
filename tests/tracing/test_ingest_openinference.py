"""OpenInference's openai instrumentor around agentlab's own loop, exported over OTLP to a
running agentlab: the ingested run must match the run agentlab recorded natively."""

from __future__ import annotations

import json

import pytest

from runs.agent.loop import AgentConfig, run_agent
from runs.agent.sim_server import sim_client
from runs.agent.suite import get_task, load_documents
from runs.agent.tools import CorpusSearch, default_tools
from runs.core.models import Run
from tests.projects import project_of, team
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step
from tracing.store.recorder import Recorder

CLEAN = {"forget": 0.0, "rephrase": 0.0, "wrong_premise": 0.0, "early_finish": 0.0, "ignore_hint": 0.0}
# What the loop puts in the model's context per observation (runs.agent.loop.MAX_OBSERVATION_CHARS):
# longer observations reach the model, and so the spans, truncated.
CONTEXT_CHARS = 2000


@pytest.fixture
def instrumented(live_server, user):
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    token = token_create(user=user, project_id=project_of(user).pk, name="openinference")[1]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {token}"})))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider
    instrumentor.uninstrument()
    provider.shutdown()


def _comparable(step: Step) -> tuple:
    args = json.dumps(step.args, sort_keys=True) if step.args is not None else None
    return (step.index, step.kind, step.tool or None, args)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("slug", "mode", "text_api", "knobs"),
    [
        ("salt-lantern-birthplace", "tools", "completions", CLEAN),
        ("salt-lantern-birthplace", "text", "completions", CLEAN),
        ("salt-lantern-birthplace", "text", "chat", CLEAN),
        # A sloppier model: rephrased queries, more turns.
        ("salt-lantern-birthplace", "tools", "completions", {**CLEAN, "rephrase": 0.6}),
    ],
)
def test_the_ingested_run_matches_the_native_one_step_for_step(instrumented, user, task, slug, mode, text_api,
                                                                knobs):
    spec = get_task(slug)
    native = Run.objects.create(project=team(), task=task, prompt=spec["prompt"], owner=user, status="running", mode=mode)
    tracer = instrumented.get_tracer("agentlab-test")
    with tracer.start_as_current_span("agentlab loop", attributes={
            "openinference.span.kind": "AGENT", "input.value": spec["prompt"], "agent.name": "agentlab"}) as root:
        outcome = run_agent(
            client=sim_client(**knobs), config=AgentConfig(mode=mode, seed=7, text_api=text_api),
            prompt=spec["prompt"], tools=default_tools(CorpusSearch(load_documents())), sink=Recorder(native.pk),
        )
        root.set_attribute("output.value", outcome.final_answer or "")
    assert instrumented.force_flush()

    ingested = Run.objects.get(source="otlp")
    assert (ingested.status, ingested.model_name, ingested.prompt) == ("finished", "sim", spec["prompt"])
    assert ingested.final_answer == outcome.final_answer
    theirs = list(Step.objects.filter(run=ingested).order_by("index"))
    ours = list(Step.objects.filter(run=native).order_by("index"))
    assert [_comparable(s) for s in theirs] == [_comparable(s) for s in ours]
    for mine, native_step in zip(theirs, ours, strict=True):
        if native_step.kind in ("thought", "final"):
            assert mine.text == native_step.text
        if native_step.kind == "observation" and len(native_step.text) <= CONTEXT_CHARS:
            assert mine.text.strip() == native_step.text.strip()
        # Usage travels on the first step of each model turn in both.
        assert (mine.prompt_tokens, mine.completion_tokens) == (native_step.prompt_tokens,
                                                                native_step.completion_tokens)
    ingested.refresh_from_db()
    assert ingested.step_count == len(ours)
