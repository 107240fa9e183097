"""tracing/client.py against a running agentlab (pytest-django's live server)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from runs.core.models import Run
from tests.projects import project_of
from tracing.client import Client, IngestError
from tracing.store.ingest.writes import token_create
from tracing.store.models import Step

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client_(live_server, user):
    return Client(live_server.url, token_create(user=user, project_id=project_of(user).pk, name="client")[1], retries=1, backoff=0.01)


def test_a_loop_records_a_run_in_a_few_lines(client_):
    with client_.run("How warm is Paris?", model="gpt-x", agent="weather-loop", batch_size=2) as run:
        run.thought("Check the weather.", prompt_tokens=40, completion_tokens=6)
        run.action("weather", {"city": "Paris"})
        run.observation("21 C and sunny", tool="weather")
        run.final("21 C")
    stored = Run.objects.get(pk=run.id)
    # Ended on its own: finished; nobody said whether 21 C was right, so unscored.
    assert (stored.status, stored.success, stored.final_answer, stored.step_count, stored.prompt_tokens) == (
        "finished", None, "21 C", 4, 40)
    assert stored.settings["agent"] == "weather-loop"
    steps = list(Step.objects.filter(run=stored).order_by("index").values_list("kind", "tool", "args"))
    assert steps == [("thought", "", None), ("action", "weather", {"city": "Paris"}),
                     ("observation", "weather", None), ("final", "", None)]
    assert client_.get_run(run.id)["step_count"] == 4


def test_steps_are_sent_in_batches(client_):
    run = client_.run("batch", batch_size=3, flush_interval=60)
    run.thought("a")
    run.thought("b")
    assert Step.objects.filter(run_id=run.id).count() == 0
    run.thought("c")
    assert Step.objects.filter(run_id=run.id).count() == 3
    run.finish("failed", reason="gave up")  # API version 1's word: finished, and wrong
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.success) == ("finished", False)


def test_a_dialogue_carries_roles_context_and_the_outcome(client_):
    context = {"system": "Refunds go to the original payment method.", "tools": [{"name": "get_order"}]}
    with client_.run("refund", context=context) as run:
        run.user("I want my money back for order #W1.")
        run.action("get_order", {"id": "#W1"})
        run.observation('{"id": "#W1", "paid_with": "visa"}', tool="get_order")
        run.reply("The refund goes to your visa card.")
        run.system("Handoff to a human is available.")
        run.step("thought", "done", role="assistant")
        run.success = True
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.success, stored.context) == ("finished", True, context)
    roles = list(Step.objects.filter(run=stored).order_by("index").values_list("kind", "role"))
    assert roles == [("observation", "user"), ("action", "assistant"), ("observation", "tool"),
                     ("action", "assistant"), ("observation", "system"), ("thought", "assistant")]
    reply = Step.objects.get(run=stored, index=3)
    assert reply.is_reply and reply.label == "reply"


def test_ctrl_c_stops_the_run_unscored(client_):
    with pytest.raises(KeyboardInterrupt), client_.run("interrupted") as run:
        run.thought("working")
        raise KeyboardInterrupt
    stored = Run.objects.get(pk=run.id)
    assert (stored.status, stored.success) == ("stopped", None)


def test_an_exception_in_the_loop_finishes_the_run_as_error(client_):
    with pytest.raises(RuntimeError), client_.run("boom") as run:
        run.thought("about to fail")
        raise RuntimeError("tool crashed")
    stored = Run.objects.get(pk=run.id)
    assert stored.status == "error" and "RuntimeError: tool crashed" in stored.reason
    assert stored.step_count == 1


def test_a_refused_request_raises_with_the_servers_reason(client_):
    run = client_.run("bad")
    with pytest.raises(IngestError, match="kind must be one of") as exc:
        client_.append(run.id, [{"index": 0, "kind": "nonsense"}])
    assert exc.value.status == 400


def test_a_bad_token_is_reported(live_server):
    with pytest.raises(IngestError, match="HTTP 401: unknown or revoked token"):
        Client(live_server.url, "al_wrong", retries=0).create_run("x")


def test_transient_errors_are_retried():
    calls = []

    class Flaky(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            calls.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status = 503 if len(calls) == 1 else 200
            body = json.dumps({"run": 1, "written": 1, "duplicates": 0}).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Client(f"http://127.0.0.1:{server.server_address[1]}", "al_x", retries=2, backoff=0.01)
        assert client.append(1, [{"index": 0, "kind": "thought"}]) == {"written": 1, "duplicates": 0, "decisions": []}
        assert len(calls) == 2 and calls[0] == calls[1]  # the same batch again: idempotent on the server
    finally:
        server.shutdown()
