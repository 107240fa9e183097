"""An endpoint that answers something other than a completion (a proxy's HTML
page, broken JSON, JSON of another shape, nothing): the run ends `error` with a
reason a person can read, never as the agent's failure."""

from __future__ import annotations

import httpx
import openai
import pytest

from runs.agent.loop import AgentConfig, Budget, run_agent
from runs.agent.suite import load_documents
from runs.agent.tools import CorpusSearch, default_tools

HTML = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>nginx</body></html>"
EMPTY_CHAT = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}]}
EMPTY_TEXT = {"id": "x", "object": "text_completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "text": ""}]}


def client_answering(body: bytes, content_type: str) -> openai.OpenAI:
    def transport(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    http_client = httpx.Client(transport=httpx.MockTransport(transport))
    return openai.OpenAI(api_key="x", base_url="http://model.invalid/v1", http_client=http_client, max_retries=0)


def run(client: openai.OpenAI, mode: str):
    steps = []
    outcome = run_agent(client=client, config=AgentConfig(mode=mode, budget=Budget(max_steps=5)),
                        prompt="Who wrote it?", tools=default_tools(CorpusSearch(load_documents())),
                        sink=steps.append)
    return outcome, steps


@pytest.mark.parametrize("mode", ["tools", "text"])
@pytest.mark.parametrize(("body", "content_type", "reason"), [
    (HTML.encode(), "text/html", "model answered an HTML page, not a JSON completion: <html><head><title>502 Bad"),
    (b'{"choices": [{"message": ', "application/json",
     'model answered invalid JSON (Expecting value at character 25): {"choices": [{"message":'),
    (b"", "application/json", "model answered invalid JSON (Expecting value at character 0): (empty body)"),
    (b'{"error": "upstream overloaded"}', "application/json", "model answered JSON with no completion in it: "),
    (b"upstream overloaded", "text/plain", "model answered text, not a JSON completion: upstream overloaded"),
])
def test_a_body_that_is_no_completion_ends_the_run_in_error(mode, body, content_type, reason):
    outcome, steps = run(client_answering(body, content_type), mode)
    assert outcome.status == "error"
    assert outcome.reason.startswith(reason), outcome.reason
    assert "JSONDecodeError" not in outcome.reason and "AttributeError" not in outcome.reason
    assert [(s.index, s.kind, s.text) for s in steps] == [(0, "error", outcome.reason)]


@pytest.mark.parametrize(("mode", "payload"), [("tools", EMPTY_CHAT), ("text", EMPTY_TEXT)])
def test_empty_completions_end_the_run_in_error_not_as_the_agents_failure(mode, payload):
    import json

    outcome, steps = run(client_answering(json.dumps(payload).encode(), "application/json"), mode)
    assert (outcome.status, outcome.reason) == ("error", "model answered an empty completion 2 times in a row")
    # One corrective retry first, as for any output that does not parse.
    assert [s.kind for s in steps] == ["error", "error"]
