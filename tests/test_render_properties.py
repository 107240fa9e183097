"""What any entry point accepts, every page that shows it renders (issue 28, Hypothesis).

Generated steps, with text and arguments as agents' tools produce them and
JSON-looking strings nested up to 5,000 deep, go in through the step API, OTLP
(JSON and protobuf) and the JSONL import; then the run page, its steps
partial, the compare grid, the export and the call panel (page, htmx panel,
JSON) of every model call must answer 200.
"""

from __future__ import annotations

import base64
import contextlib
import json

import pytest
from django.db import transaction
from google.protobuf import json_format
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from runs.core.models import Run
from runs.imports.services import import_lines
from tests.htmx import hx
from tests.projects import project_of
from tracing.core.steps import KINDS
from tracing.store.ingest.writes import token_create
from tracing.store.models import ModelCall

pytestmark = pytest.mark.django_db

RENDER_SETTINGS = settings(max_examples=25, deadline=None,
                           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

DEPTHS = [2, 99, 100, 101, 500, 999, 1000, 5000]


def _nested(depth: int, shape: str) -> str:
    if shape == "list":
        return "[" * depth + "]" * depth
    if shape == "object":
        return '{"a": ' * depth + "1" + "}" * depth
    return '{"a": [' * (depth // 2) + '"x"' + "]}" * (depth // 2)


deep_text = st.builds(_nested, st.sampled_from(DEPTHS), st.sampled_from(["list", "object", "mixed"]))
odd_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "\x00", "a\udc80b", "用户想要退款", '{"rows": [1,', "[]", "null", "**bold** <script>x</script>",
                     "[link](javascript:alert(1))", "9" * 5000]),
)
texts = st.one_of(deep_text, odd_text)
# Arguments: a string (deep or not), or shallow structure holding one.
args_values = st.one_of(texts, st.dictionaries(st.sampled_from(["q", "city", "sql"]), texts, max_size=2),
                        st.lists(texts, max_size=2))

steps = st.lists(st.fixed_dictionaries({
    "kind": st.sampled_from(KINDS), "content": texts,
}, optional={
    "tool": st.sampled_from(["search", "sql", "respond"]), "args": args_values,
    "meta": st.dictionaries(st.sampled_from(["status", "note"]), texts, max_size=2),
}), min_size=1, max_size=5).map(lambda found: [{**step, "index": i} for i, step in enumerate(found)])

# OTLP: model turns whose content, tool-call arguments and input messages hold the texts.
llm_turns = st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=3)


def _clean(text: str) -> str:
    # Protobuf strings must be valid Unicode; a lone surrogate goes in JSON only.
    return text.encode("utf-8", "replace").decode("utf-8")


def _otlp_request(turns: list[tuple[str, str, str]], trace: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    ss = request.resource_spans.add().scope_spans.add()
    t0 = 1_700_000_000_000_000_000
    for n, (content, arguments, user_text) in enumerate(turns, start=1):
        sp = ss.spans.add()
        sp.trace_id, sp.span_id, sp.name = trace, n.to_bytes(8, "big"), "ChatCompletion"
        sp.start_time_unix_nano, sp.end_time_unix_nano = t0 + n * 10**7, t0 + n * 10**7 + 10**6
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-x",
                 "llm.output_messages.0.message.role": "assistant",
                 "llm.output_messages.0.message.content": _clean(content),
                 "llm.output_messages.0.message.tool_calls.0.tool_call.id": f"c{n}",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "search",
                 "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": _clean(arguments),
                 "llm.input_messages.0.message.role": "user",
                 "llm.input_messages.0.message.content": _clean(user_text),
                 "input.value": _clean(user_text), "output.value": _clean(content)}
        for key, value in attrs.items():
            kv = sp.attributes.add()
            kv.key, kv.value.string_value = key, value
    return request


def _otlp_json(request: ExportTraceServiceRequest) -> bytes:
    body = json_format.MessageToDict(request)
    for rs in body["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:  # OTLP/JSON ids are hex, not protobuf JSON's base64
                span["traceId"] = base64.b64decode(span["traceId"]).hex()
                span["spanId"] = base64.b64decode(span["spanId"]).hex()
    return json.dumps(body).encode()


def _event(text: str) -> None:
    with contextlib.suppress(InvalidArgument):  # the plain tests below share _send
        event(text)


def _send(client, user, token, entry: str, found_steps: list[dict], turns) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if entry == "api":
        for external_id in ("a", "b"):
            body = json.dumps({"prompt": _nested(5000, "list"), "external_id": external_id, "steps": found_steps,
                               "finish": {"status": "finished"}})
            response = client.generic("POST", "/api/runs", body.encode("utf-8", "surrogatepass"),
                                      content_type="application/json", **auth)
            _event(f"api {response.status_code}")
            assert response.status_code in (201, 400), response.content[:300]
    elif entry == "import":
        lines = [json.dumps({"run_id": run_id, "task": "t", "steps": found_steps}).encode("utf-8", "surrogatepass")
                 for run_id in ("a", "b")]
        result = import_lines(lines, project_id=project_of(user).pk, owner=user)
        _event(f"import errors {len(result.errors)}")
    else:
        for trace in (b"\x01" * 16, b"\x02" * 16):
            request = _otlp_request(turns, trace)
            proto = entry == "otlp_proto"
            body = request.SerializeToString() if proto else _otlp_json(request)
            response = client.generic("POST", "/v1/traces", body,
                                      content_type="application/x-protobuf" if proto else "application/json", **auth)
            _event(f"{entry} {response.status_code}")
            assert response.status_code in (200, 400), response.content[:300]


def _assert_pages_render(client) -> None:
    ids = list(Run.objects.values_list("pk", flat=True))
    for run_id in ids:
        for url, headers in ((f"/runs/{run_id}/", {}), (f"/runs/{run_id}/steps/?after=-1", hx("poller")),
                             (f"/runs/{run_id}/export.jsonl", {})):
            response = client.get(url, headers=headers)
            assert response.status_code == 200, (url, response.status_code)
            _ = b"".join(response.streaming_content) if response.streaming else response.content
        for index in ModelCall.objects.filter(run_id=run_id).values_list("step_index", flat=True):
            for url, headers in ((f"/runs/{run_id}/calls/{index}/", {}), (f"/runs/{run_id}/calls/{index}/", hx()),
                                 (f"/runs/{run_id}/calls/{index}.json", {})):
                response = client.get(url, headers=headers)
                assert response.status_code == 200, (url, response.status_code)
    if len(ids) >= 2:
        response = client.get(f"/compare/?runs={ids[0]},{ids[1]}")
        assert response.status_code == 200, response.status_code
        response = client.get(f"/compare/diff/?a={ids[0]}&b={ids[1]}")
        assert response.status_code == 200, response.status_code


@pytest.fixture
def token(user):
    return token_create(user=user, project_id=project_of(user).pk, name="render")[1]


@RENDER_SETTINGS
@given(entry=st.sampled_from(["api", "import", "otlp_json", "otlp_proto"]), found_steps=steps, turns=llm_turns)
def test_what_an_entry_point_accepts_every_page_renders(client, user, token, entry, found_steps, turns):
    client.force_login(user)
    with transaction.atomic():
        _send(client, user, token, entry, found_steps, turns)
        _assert_pages_render(client)
        transaction.set_rollback(True)


@pytest.mark.parametrize("entry", ["api", "import", "otlp_json", "otlp_proto"])
def test_a_string_nested_5000_deep_is_accepted_and_shown_as_text(client, user, token, entry):
    deep = _nested(5000, "list")
    found = [{"index": 0, "kind": "action", "content": deep, "tool": "search", "args": deep},
             {"index": 1, "kind": "observation", "content": deep}, {"index": 2, "kind": "final", "content": "ok"}]
    client.force_login(user)
    _send(client, user, token, entry, found, [(deep, deep, deep)])
    assert Run.objects.count() == 2
    _assert_pages_render(client)
    page = client.get(f"/runs/{Run.objects.first().pk}/").content.decode()
    assert "[[[[[[[[" in page  # shown as the text it is
