"""The model call behind each turn: recorded as sent, stored once, shown on demand."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.agent.sim_server import sim_client
from runs.calls.forms import ReplayForm
from runs.calls.resend import ReplayResult
from runs.core.models import Run, Task
from runs.launch import execution, services
from tests.projects import project_of
from tracing.core.model_calls import ModelCallRecord, media_part, prompt_segments, prompt_text
from tracing.store.call_store import CallRecorder, call_messages
from tracing.store.models import CallMessage, ModelCall, Step

pytestmark = pytest.mark.django_db


def _sim_run(user, *, mode="tools", slug="tollby-playhouse-seats", **fields) -> Run:
    call_command("loaddemo", verbosity=0)
    task = Task.objects.get(slug=slug)
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode=mode,
                            temperature=0.5, max_steps=fields.pop("max_steps", 12), max_tokens=50_000, seed=3,
                            settings={"sim": {"rephrase": 0, "forget": 0, "early_finish": 0, "wrong_premise": 0}})
    run = services.run_create(owner=user, project=project_of(user), spec=spec)
    if fields:
        Run.objects.filter(pk=run.pk).update(**fields)
    return execution.run_execute(run_id=run.pk, client=sim_client())


def test_every_model_turn_is_recorded_with_what_was_sent(user):
    run = _sim_run(user)
    turns = list(Step.objects.filter(run=run).exclude(prompt_tokens=0).values_list("index", flat=True))
    calls = list(ModelCall.objects.filter(run=run).order_by("step_index"))
    assert [c.step_index for c in calls] == turns and len(calls) >= 2
    first, last = calls[0], calls[-1]
    sent = call_messages(first)
    assert sent[0]["role"] == "system" and sent[1] == {"role": "user", "content": run.prompt}
    assert first.params["model"] == "sim" and first.params["temperature"] == 0.5
    assert first.params["max_tokens"] == 256 and "extra_body" in first.params
    assert {t["function"]["name"] for t in first.tools.body} >= {"search", "finish"}
    # The last call carries the whole conversation: every observation as the model saw it.
    last_sent = call_messages(last)
    tool_msgs = [m for m in last_sent if m["role"] == "tool"]
    observations = Step.objects.filter(run=run, kind="observation", index__lt=last.step_index)
    assert len(tool_msgs) == observations.count()
    assert last.response["choices"][0]["message"] and last.prompt_tokens > 0 and last.latency_ms > 0


def test_consecutive_turns_store_only_what_they_add(user):
    run = _sim_run(user)
    calls = list(ModelCall.objects.filter(run=run).order_by("step_index"))
    for previous, call in zip(calls, calls[1:], strict=False):
        assert call.prefix_len == len(call_messages(previous))  # tools mode: the conversation only grows
        assert len(call.suffix_ids) <= 3
    # The system prompt and tool schemas are one row whatever the number of runs.
    before = CallMessage.objects.count()
    _sim_run(user)
    system = call_messages(calls[0])[0]
    from tracing.store.call_store import digest_of
    assert CallMessage.objects.filter(digest=digest_of(system)).count() == 1
    assert CallMessage.objects.count() - before < sum(len(c.suffix_ids) for c in calls)


def test_text_mode_prompt_is_stored_in_segments_and_joins_back(user):
    run = _sim_run(user, mode="text")
    calls = list(ModelCall.objects.filter(run=run).order_by("step_index"))
    assert calls and all(c.api == "completions" for c in calls)
    prompt = prompt_text(call_messages(calls[-1]))
    assert prompt.startswith("Answer the question") and prompt.endswith("\nThought:")
    assert calls[-1].params["stop"] == ["Observation:"]
    assert len(calls[-1].suffix_ids) < len(call_messages(calls[-1]))
    assert prompt_text(prompt_segments(prompt)) == prompt


def test_a_model_that_is_down_leaves_the_failed_request_on_record(user, settings):
    settings.SIM_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    call_command("loaddemo", verbosity=0)
    task = Task.objects.get(slug="tollby-playhouse-seats")
    spec = services.RunSpec(task=task, prompt=task.prompt, provider="sim", model_name="sim", mode="tools",
                            temperature=0.0, max_steps=5, max_tokens=5000, seed=1)
    run = execution.run_execute(run_id=services.run_create(owner=user, project=project_of(user), spec=spec).pk)
    assert run.status == Run.Status.ERROR
    call = ModelCall.objects.get(run=run)
    assert "cannot reach the model endpoint" in call.error and call.response is None
    assert Step.objects.get(run=run, index=call.step_index).kind == "error"


def test_a_redelivered_call_is_not_stored_twice(make_run):
    run = make_run()
    record = ModelCallRecord(step_index=0, api="chat", messages=[{"role": "user", "content": "hi"}],
                             params={"model": "m"})
    CallRecorder(run.pk)(record)
    CallRecorder(run.pk)(record)
    assert ModelCall.objects.filter(run=run).count() == 1


def test_nul_and_odd_text_survive_storage(make_run):
    run = make_run()
    text = "a\x00b <script>alert(1)</script> 中文"
    CallRecorder(run.pk)(ModelCallRecord(step_index=0, api="chat", messages=[{"role": "user", "content": text}]))
    assert call_messages(ModelCall.objects.get(run=run)) == [{"role": "user", "content": text.replace("\x00", "\ufffd")}]



def test_the_raw_response_comes_back_as_received_and_stored_small(make_run):
    run = make_run()
    response = {"id": "chatcmpl-9", "choices": [{"finish_reason": "stop", "index": 0, "logprobs": None,
                                                 "message": {"content": "Paris \x00 中文", "role": "assistant"}}],
                "created": 1796101614, "model": "gpt-4o-mini", "object": "chat.completion",
                "usage": {"completion_tokens": 3, "prompt_tokens": 20, "total_tokens": 23}, "zz": 1.5e300}
    CallRecorder(run.pk)(ModelCallRecord(step_index=0, api="chat", messages=[], response=response))
    call = ModelCall.objects.get(run=run)
    expected = {**response, "choices": [{**response["choices"][0], "message": {
        "content": "Paris \ufffd 中文", "role": "assistant"}}]}
    # Key order too: the raw view shows the endpoint's JSON in its own order, not jsonb's.
    assert json.dumps(call.response) == json.dumps(expected)
    assert len(bytes(call.response_deflated)) < len(json.dumps(response)) / 2


def test_a_call_shares_the_prefix_of_the_call_before_it_in_step_order(make_run):
    run = make_run()
    sent = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    recorder = CallRecorder(run.pk)
    for index in range(3):
        sent = [*sent, {"role": "assistant", "content": f"a{index}"}]
        recorder(ModelCallRecord(step_index=index * 3, api="chat", messages=list(sent)))
    calls = list(ModelCall.objects.filter(run=run).order_by("step_index"))
    assert [c.prefix_len for c in calls] == [0, 3, 4]
    assert call_messages(calls[-1]) == sent
    # A recorder that starts afresh (a resumed run) shares nothing with what came before.
    CallRecorder(run.pk)(ModelCallRecord(step_index=9, api="chat", messages=[*sent, {"role": "user", "content": "r"}]))
    last = ModelCall.objects.get(run=run, step_index=9)
    assert last.prefix_len == 0 and call_messages(last) == [*sent, {"role": "user", "content": "r"}]

# --- the panel ---------------------------------------------------------------------------------------------------


def _stored_call(run, messages, *, response=None, step_index=0, **params):
    CallRecorder(run.pk)(ModelCallRecord(step_index=step_index, api="chat", messages=messages,
                                         params={"model": "gpt-4o-mini", "temperature": 0.2, **params},
                                         response=response, prompt_tokens=1000, completion_tokens=100,
                                         latency_ms=12.0))
    return ModelCall.objects.get(run=run, step_index=step_index)


def test_run_page_offers_the_call_closed_and_loads_it_on_demand(auth_client, user):
    run = _sim_run(user)
    call = ModelCall.objects.filter(run=run).order_by("step_index").last()
    page = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    url = reverse("runs:call", args=[run.pk, call.step_index])
    assert f'hx-get="{url}"' in page and 'class="model-call"' in page
    assert "Sent:" not in page  # closed: nothing of the call on the page
    panel = auth_client.get(url, headers={"HX-Request": "true"})
    body = panel.content.decode()
    assert panel.status_code == 200 and "<html" not in body
    assert "Sent:" in body and "Replay this call" in body and "tollby" in body.lower()
    full = auth_client.get(url)  # a direct link: the same panel on a page
    assert "<html" in full.content.decode() and "Sent:" in full.content.decode()


def test_opening_a_call_runs_a_constant_number_of_queries(auth_client, user, django_assert_num_queries):
    run = _sim_run(user)
    call = ModelCall.objects.filter(run=run).order_by("step_index").last()
    # 1 session, 2 user, 3 membership (the current project), 4 run, 5 call with its tools, 6 the run's calls
    # (prefix chain), 7 message bodies
    with django_assert_num_queries(7):
        auth_client.get(reverse("runs:call", args=[run.pk, call.step_index]), headers={"HX-Request": "true"})


def test_big_messages_are_folded_media_are_placeholders_and_text_is_inert(auth_client, make_run):
    run = make_run(provider="openai", model_name="gpt-4o-mini")
    huge = "x" * 1_000_000 + "THE-END"
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 40_000}}
    audio = {"type": "input_audio", "input_audio": {"data": "UklG" * 1000, "format": "wav"}}
    _stored_call(run, [
        {"role": "system", "content": "<script>alert('sys')</script>"},
        {"role": "user", "content": [{"type": "text", "text": "look <b>here</b>"}, image, audio]},
        {"role": "tool", "tool_call_id": "call_1", "content": huge},
    ], response={"choices": [{"message": {"role": "assistant", "content": "<img src=x onerror=alert(1)>"},
                              "finish_reason": "stop"}]})
    response = auth_client.get(reverse("runs:call", args=[run.pk, 0]), headers={"HX-Request": "true"})
    body = response.content.decode()
    assert len(body) < 100_000 and "THE-END" not in body
    assert "1000007 characters in all" in body
    assert "[image: image/png, 29 KB inline — not shown]" in body and "[audio: wav" in body
    assert "AAAA" not in body and "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;" in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert "$0.00021" in body  # 1,000 prompt + 100 completion tokens of gpt-4o-mini
    whole = auth_client.get(reverse("runs:call_json", args=[run.pk, 0])).json()
    assert whole["messages"][2]["content"].endswith("THE-END")


def test_an_anonymous_visitor_is_sent_to_log_in(client, make_run):
    run = make_run()
    _stored_call(run, [{"role": "user", "content": "hi"}])
    for name in ("runs:call", "runs:call_json", "runs:call_replay"):
        assert client.get(reverse(name, args=[run.pk, 0])).status_code == 302
    assert client.post(reverse("runs:call_replay", args=[run.pk, 0]), {"provider": "sim"}).status_code == 302


def test_a_step_without_a_call_or_a_missing_run_is_404(auth_client, make_run):
    run = make_run()
    _stored_call(run, [{"role": "user", "content": "hi"}])
    assert auth_client.get(reverse("runs:call", args=[run.pk, 7])).status_code == 404
    assert auth_client.get(reverse("runs:call", args=[run.pk + 999, 0])).status_code == 404


# --- replay ------------------------------------------------------------------------------------------------------


@pytest.fixture
def in_process_sim(monkeypatch):
    monkeypatch.setattr("runs.calls.resend.make_client", lambda base_url, api_key: sim_client())


def test_replay_shows_the_edited_calls_answer_beside_the_recorded_one(auth_client, user, in_process_sim):
    run = _sim_run(user)
    call = ModelCall.objects.filter(run=run).order_by("step_index").first()
    url = reverse("runs:call_replay", args=[run.pk, call.step_index])
    form = auth_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'name="content_1"' in form and "Send to the model" in form
    steps_before, calls_before = Step.objects.count(), ModelCall.objects.count()
    data = {"provider": "sim", "temperature": "0.5", "max_tokens": "256"}
    for i, message in enumerate(call_messages(call)):
        data[f"content_{i}"] = message["content"] or ""
    response = auth_client.post(url, data, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200, body
    assert "Recorded answer" in body and "Replayed answer" in body and 'role="alert"' not in body
    assert body.count("search") >= 2  # the sim answers this prompt with a search, as it did in the run
    assert Step.objects.count() == steps_before and ModelCall.objects.count() == calls_before


def test_replaying_against_a_model_that_is_down_says_so_and_records_nothing(auth_client, make_run, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    run = make_run(provider="openai", model_name="gpt-4o")
    _stored_call(run, [{"role": "user", "content": "hi"}])
    steps_before = Step.objects.count()
    response = auth_client.post(reverse("runs:call_replay", args=[run.pk, 0]),
                                {"provider": "openai", "model_name": "gpt-4o", "content_0": "hello"},
                                headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "cannot reach the model endpoint http://127.0.0.1:9/v1" in body and 'role="alert"' in body
    assert Step.objects.count() == steps_before and ModelCall.objects.filter(run=run).count() == 1


def test_a_replayed_answer_is_shown_inert(auth_client, make_run, monkeypatch):
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    answer = {"choices": [{"message": {"role": "assistant", "content": evil, "tool_calls": [
        {"id": evil, "type": "function", "function": {"name": evil, "arguments": evil}}]}, "finish_reason": evil}]}
    monkeypatch.setattr("runs.calls.views.call_replay",
                        lambda **kwargs: ReplayResult(model=evil, response=answer, prompt_tokens=3, completion_tokens=1))
    run = make_run()
    _stored_call(run, [{"role": "user", "content": "hi"}])
    response = auth_client.post(reverse("runs:call_replay", args=[run.pk, 0]), {"provider": "sim", "content_0": evil},
                                headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200 and "Replayed answer" in body
    assert "<script" not in body and "<img src=x" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


@pytest.mark.parametrize(("data", "error"), [
    ({"provider": "openai", "model_name": "", "content_0": "x"}, "Name the model"),
    ({"provider": "local", "content_0": "x"}, "text prompt only"),
    ({"provider": "nope", "content_0": "x"}, "Select a valid choice"),
    ({"provider": "sim", "temperature": "hot", "content_0": "x"}, "Enter a number"),
    ({"provider": "sim", "content_0": "x" * 1_200_000}, "at most 1100000 characters"),
])
def test_bad_replay_input_is_a_form_error(auth_client, make_run, data, error):
    run = make_run()
    _stored_call(run, [{"role": "user", "content": "hi"}])
    response = auth_client.post(reverse("runs:call_replay", args=[run.pk, 0]), data, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert error in response.content.decode().replace(",", "")


def test_a_traced_media_placeholder_is_replayed_as_a_note_not_as_a_part_the_model_refuses():
    image = media_part("image", url="data:image/png;base64," + "A" * 400)
    native = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    form = ReplayForm({"provider": "sim", "content_0": "sys"}, api="chat", messages=[
        {"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": "what?"}, image, native]}])
    assert form.is_valid(), form.errors
    assert form.edited_messages()[1]["content"] == [
        {"type": "text", "text": "what?"}, {"type": "text", "text": "[image not recorded in the trace]"}, native]


def test_a_long_conversation_opens_with_its_ends_and_loads_the_middle_on_request(auth_client, make_run):
    run = make_run()
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "question"}]
    messages += [{"role": "tool", "tool_call_id": f"c{i}", "content": f"observation number {i}"} for i in range(60)]
    _stored_call(run, messages)
    url = reverse("runs:call", args=[run.pk, 0])
    body = auth_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "Sent: 62 messages" in body and "question" in body and "observation number 59" in body
    assert "observation number 10<" not in body and "show the 40 messages in between" in body
    middle = auth_client.get(url, {"earlier": "1"}, headers={"HX-Request": "true"}).content.decode()
    assert "observation number 10<" in middle and "observation number 39<" in middle
    assert "observation number 40<" not in middle and "question" not in middle
