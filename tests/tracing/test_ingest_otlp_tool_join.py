"""A GenAI ``chat`` span's tool call and the ``execute_tool`` span with the same
call id are one action, whatever the clocks and the exporter do: the tool
span starting in the same nanosecond as the model call, or before it (clock
skew), the spans shuffled and cut into batches. Each such trace must give
exactly the steps of the same trace sent in order, in one batch."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.core.models import Run
from tests.projects import project_of
from tracing.core.formats.otlp import Span
from tracing.store.ingest import services
from tracing.store.models import Step

MS = 1_000_000
T0 = 1_700_000_000_000 * MS
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = "000000000000fff0"
TOOLS = ["lookup_order", "refund", "search"]
# Where an execute_tool span starts against the model call that made its call.
TIMINGS = {"after": 6 * MS, "same": 0, "before": -3 * MS}


def _sid(n: int) -> str:
    return f"{n:016x}"


def _trace(turns: list[list[str]], timings: list[str]) -> list[Span]:
    """Model calls each making the tool calls of one turn, the tools run, a last answer, the root."""
    spans: list[Span] = []
    n, at = 1, 10 * MS
    for t, calls in enumerate(turns):
        chat_start = T0 + at
        parts = [{"type": "tool_call", "id": f"call_{t}_{j}", "name": tool, "arguments": {"q": f"{t}-{j}"}}
                 for j, tool in enumerate(calls)]
        # A model call's span id sorts after its tools' (ids are random): a tie
        # on the clock must not fall back on them.
        spans.append(Span(trace_id=TRACE, span_id=_sid(0x1000 + n), parent_id=ROOT, name="chat m", start_ns=chat_start,
                          end_ns=chat_start + 5 * MS, attrs={
                              "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                              "gen_ai.usage.input_tokens": 100 + t, "gen_ai.usage.output_tokens": 9,
                              "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}))
        n += 1
        base = chat_start + TIMINGS[timings[t % len(timings)]]
        for j, tool in enumerate(calls):
            start = base + j * MS  # tools of one turn keep their own order
            spans.append(Span(trace_id=TRACE, span_id=_sid(n), parent_id=ROOT, name=f"execute_tool {tool}",
                              start_ns=start, end_ns=start + MS, attrs={
                                  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                  "gen_ai.tool.call.id": f"call_{t}_{j}",
                                  "gen_ai.tool.call.arguments": json.dumps({"q": f"{t}-{j}"}),
                                  "gen_ai.tool.call.result": f"result {t}-{j}"}))
            n += 1
        at += 20 * MS
    last = T0 + at
    spans.append(Span(trace_id=TRACE, span_id=_sid(n), parent_id=ROOT, name="chat m", start_ns=last,
                      end_ns=last + 5 * MS, attrs={
                          "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                          "gen_ai.response.finish_reasons": ["stop"],
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                              {"type": "text", "content": "Refunded."}]}])}))
    spans.append(Span(trace_id=TRACE, span_id=ROOT, parent_id="", name="invoke_agent support", start_ns=T0,
                      end_ns=last + 10 * MS, attrs={"gen_ai.operation.name": "invoke_agent",
                                                    "gen_ai.agent.name": "support"}))
    return spans


def _ingest(user, batches: list[list[Span]]) -> list[tuple]:
    Run.objects.filter(source="otlp").delete()
    for batch in batches:
        # Fresh objects per send: what the service does to a span must not leak between cases.
        result = services.otlp_ingest(owner=user, project_id=project_of(user).pk,
                                      spans=[Span.from_payload(json.loads(json.dumps(s.to_payload())))
                                             for s in batch], analyse=False)
        assert result.rejected == 0, result.rejected_reason
    run = Run.objects.get(source="otlp")
    assert run.status == "finished"
    return [(s.kind, s.tool, s.text, json.dumps(s.args), s.meta.get("tool_call_id"), s.prompt_tokens)
            for s in Step.objects.filter(run=run).order_by("index")]


_turns = st.lists(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3), min_size=1, max_size=4)


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=_turns, timings=st.lists(st.sampled_from(sorted(TIMINGS)), min_size=1, max_size=4),
       seed=st.integers(0, 2**32 - 1), cuts=st.integers(0, 4))
def test_a_call_and_its_tool_span_are_one_action_whatever_the_order(user, turns, timings, seed, cuts):
    expected = _ingest(user, [_trace(turns, ["after"])])
    calls = [c for turn in turns for c in turn]
    assert [s[0] for s in expected].count("action") == len(calls)
    assert expected[-1][:3] == ("final", "", "Refunded.")

    spans = _trace(turns, timings)
    rng = random.Random(seed)
    rng.shuffle(spans)
    points = sorted(rng.sample(range(1, len(spans)), min(cuts, len(spans) - 1)))
    batches = [spans[a:b] for a, b in zip([0, *points], [*points, len(spans)], strict=True)]
    got = _ingest(user, batches)
    assert got == expected
    # One action per call id, its result right where the tool ran.
    actions = [s[4] for s in got if s[0] == "action"]
    assert len(actions) == len(set(actions)) == len(calls)


@pytest.mark.django_db
@pytest.mark.parametrize("timing", sorted(TIMINGS))
@pytest.mark.parametrize("split", ["one batch", "tool first", "model call first"])
def test_one_call_same_millisecond_reversed_or_apart(user, timing, split):
    spans = _trace([["refund"]], [timing])
    chat, tool, rest = spans[0], spans[1], spans[2:]
    batches = {"one batch": [[tool, chat, *rest]], "tool first": [[tool], [chat], rest],
               "model call first": [[chat], [tool], rest]}[split]
    steps = _ingest(user, batches)
    assert [(s[0], s[1], s[2]) for s in steps] == [
        ("action", "refund", 'refund({"q": "0-0"})'), ("observation", "refund", "result 0-0"),
        ("final", "", "Refunded.")]
    assert steps[0][4] == steps[1][4] == "call_0_0"
