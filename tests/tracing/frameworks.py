"""Shared pieces of the framework tracing tests: a real OTLP/HTTP protobuf
exporter pointed at a live agentlab, the scripts the model follows, and what
every traced run must look like once stored."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from runs.core.models import Run
from tests.projects import project_of
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

TASK = "What is 1021 * 1023?"
ANSWER = "1021 * 1023 = 1044483."
ERROR = "calculator backend unavailable"
LOOP_QUERY = {"query": "population of Calder Bay"}
LOOP_TURNS = 8

# The model's side of each variant: ("call", tool, args) or ("text", answer).
NORMAL = [("call", "calculate", {"expression": "1021 * 1023"}), ("text", ANSWER)]
# The same search again and again, then an answer: a loop the default policy interrupts.
LOOP = [("call", "search", LOOP_QUERY)] * LOOP_TURNS + [("text", "I could not find it.")]
# The tool raises; the model then answers anyway.
ERRORED = [("call", "calculate", {"expression": "fail"}), ("text", "The calculator is down.")]


def calculate(expression: str) -> str:
    if expression == "fail":
        raise RuntimeError(ERROR)
    return "1044483"


def search(query: str) -> str:
    return "No results."


@contextlib.contextmanager
def exporter_provider(live_server, user, service: str = "framework-test") -> Iterator[TracerProvider]:
    """A tracer provider exporting with the SDK's own batch processor and
    protobuf OTLP/HTTP exporter to the live server, flushed and shut at exit."""
    _, token = token_create(user=user, project_id=project_of(user).pk, name="framework")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=f"{live_server.url}/v1/traces", headers={"Authorization": f"Bearer {token}"})
    provider.add_span_processor(BatchSpanProcessor(exporter))
    try:
        yield provider
    finally:
        assert provider.force_flush(30_000)
        provider.shutdown()


def only_run() -> Run:
    runs = list(Run.objects.filter(source="otlp"))
    assert len(runs) == 1, [r.prompt for r in runs]
    return runs[0]


def steps_of(run: Run) -> list[Step]:
    return list(Step.objects.filter(run=run).order_by("index"))


def kinds(steps: list[Step]) -> list[str]:
    return [s.kind for s in steps]


def assert_finished(run: Run, *, answer: str, prompt: str = TASK, actions: int,
                    model: str = "scripted-model") -> list[Step]:
    """One run, ended as finished with exactly one Final (the answer, last), plain-text prompt and answer."""
    steps = steps_of(run)
    assert kinds(steps).count("final") == 1, kinds(steps)
    assert steps[-1].kind == "final" and steps[-1].text == answer, [(s.kind, s.text[:80]) for s in steps]
    # No outcome in the trace: unscored, as a client run that does not set it.
    assert run.status == Run.Status.FINISHED and run.success is None
    assert run.prompt == prompt, run.prompt
    assert run.final_answer == answer
    assert run.model_name == model, run.model_name
    assert kinds(steps).count("action") == actions
    assert kinds(steps).count("observation") == actions
    assert all(s.role for s in steps)
    assert [s.index for s in steps] == list(range(len(steps)))
    return steps


def assert_loop_interrupted(run: Run) -> None:
    """The replayed default policy interrupts the repeated search, and the list filter finds the run."""
    run.refresh_from_db()
    assert run.intervention_count >= 1
    assert "repetition" in run.intervention_detectors
    assert Run.objects.filter(intervention_detectors__contains=["repetition"], pk=run.pk).exists()
    marked = [s for s in steps_of(run) if s.meta.get("replayed_intervention")]
    assert marked and marked[0].meta["replayed_intervention"]["detector"] == "repetition"


def assert_error_observation(steps: list[Step], cause: str = ERROR) -> Step:
    observations = [s for s in steps if s.kind == "observation"]
    assert len(observations) == 1
    obs = observations[0]
    assert obs.meta["status"] == "error", obs.meta
    assert cause in obs.text or cause in obs.meta.get("cause", ""), (obs.text, obs.meta)
    assert obs.meta["signals"]["obs_class"] == "error", obs.meta["signals"]
    return obs


# The framework table (issue 29): each variant's script, the answer it ends
# with, and the raw tool output each observation must show.
VARIANTS = {
    "normal": (NORMAL, ANSWER, ["1044483"]),
    "loop": (LOOP, "I could not find it.", ["No results."] * LOOP_TURNS),
    "error": (ERRORED, "The calculator is down.", None),
}


def assert_table_row(run: Run, variant: str, requests: list[dict], *, prompt: str = TASK,
                     tokens: bool = True, model: str = "scripted-model") -> list[Step]:
    """What every framework's traced run must look like, whatever its
    instrumentation wraps around it: one Final, the actions as the model
    called them, the raw tool output, every model request once with the
    tokens it reported, loop bands on the loop and no break on the normal run."""
    from tracing.store.models import ModelCall

    script, answer, outputs = VARIANTS[variant]
    calls = [(r[1], r[2]) for r in script if r[0] == "call"]
    steps = assert_finished(run, answer=answer, prompt=prompt, actions=len(calls), model=model)
    assert [(s.tool, s.args) for s in steps if s.kind == "action"] == calls
    observations = [s for s in steps if s.kind == "observation"]
    assert [s.tool for s in observations] == [c[0] for c in calls]
    if outputs is None:
        assert_error_observation(steps)
    else:
        assert [s.text for s in observations] == outputs
    assert ModelCall.objects.filter(run=run).count() == len(requests)
    if tokens:
        assert sum(s.prompt_tokens for s in steps) == sum(len(json.dumps(r)) // 4 for r in requests)
        assert sum(s.completion_tokens for s in steps) == 7 * len(requests)
    run.refresh_from_db()
    if variant == "loop":
        assert_loop_interrupted(run)
    if variant == "normal":
        assert run.first_anchor_break is None, (run.anchor_reason, run.anchor_evidence)
        assert not [s for s in steps if s.kind == "thought" and not s.text], "blank thoughts"
    return steps
