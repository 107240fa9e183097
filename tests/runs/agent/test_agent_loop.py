from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from helpers_agent import (
    CLEAN,
    ScriptedClient,
    chat_reply,
    recording_sim_client,
    run_task,
    signature,
    text_reply,
    usage,
)

from runs.agent import loop as L
from runs.agent.loop import AgentConfig, Budget, default_prepare_observation, run_agent
from runs.agent.sim_server import httpx, sim_client
from runs.agent.suite import get_task, load_documents, score
from runs.agent.tools import CorpusSearch, ToolResult, default_tools
from tracing.core.steps import KINDS, Intervention

MODES = [("tools", "completions"), ("text", "completions"), ("text", "chat")]


# --- end to end against the simulated model -------------------------------------------


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_correct_run_succeeds_in_every_mode(mode, text_api):
    outcome, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), mode=mode, text_api=text_api)
    assert outcome.status == "succeeded"
    assert score(get_task("salt-lantern-birthplace"), outcome.final_answer)
    assert [s.index for s in steps] == list(range(len(steps)))
    assert all(s.kind in KINDS for s in steps)
    assert [s.kind for s in steps if s.kind != "thought"] == [
        "action",
        "observation",
        "action",
        "observation",
        "final",
    ]
    actions = [s for s in steps if s.kind == "action"]
    # The bridge entity was read from the first observation.
    assert "Orren Vasquel" in json.dumps(actions[1].args)
    if mode == "text":
        assert actions[0].args == "The Salt Lantern novel" and actions[0].text.startswith("search[")
    else:
        assert actions[0].args == {"query": "The Salt Lantern novel"}


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_calculate_task_succeeds(mode, text_api):
    outcome, steps = run_task("aston-brill-family-fare", client=sim_client(**CLEAN), mode=mode, text_api=text_api)
    assert outcome.status == "succeeded" and score(get_task("aston-brill-family-fare"), outcome.final_answer)
    calc = [s for s in steps if s.kind == "observation" and s.tool == "calculate"]
    assert calc and calc[0].text == "31"


def test_model_steps_carry_tokens_and_latency():
    _, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN))
    turn_starts = [s for s in steps if s.prompt_tokens]
    assert len(turn_starts) == 3  # three model turns
    assert all(s.completion_tokens > 0 and s.latency_ms > 0 for s in turn_starts)
    assert all(s.prompt_tokens == 0 for s in steps if s.kind == "observation")


def test_steps_reach_the_sink_as_they_happen():
    seen = []

    def sink(step):
        seen.append(step.index)
        assert step.index == len(seen) - 1  # in order, one at a time

    task = get_task("kell-ferry-return-saving")
    run_agent(
        client=sim_client(**CLEAN),
        config=AgentConfig(seed=3),
        prompt=task["prompt"],
        tools=default_tools(CorpusSearch(load_documents())),
        sink=sink,
    )
    assert seen


def test_wrong_premise_takes_the_hometown():
    outcome, _ = run_task("salt-lantern-birthplace", client=sim_client(**{**CLEAN, "wrong_premise": 1.0}))
    assert outcome.status == "succeeded" and outcome.final_answer == "Mirefield"
    assert not score(get_task("salt-lantern-birthplace"), outcome.final_answer)


def test_wrong_premise_obeys_the_injection_page():
    outcome, _ = run_task("lumen-bridge-length", client=sim_client(**{**CLEAN, "wrong_premise": 1.0}))
    assert outcome.final_answer == "42"


def test_early_finish_answers_with_the_bridge_entity():
    outcome, _ = run_task("salt-lantern-birthplace", client=sim_client(**{**CLEAN, "early_finish": 1.0}))
    assert outcome.final_answer == "Orren Vasquel"


def test_early_finish_takes_a_timeout_for_no_report():
    outcome, steps = run_task("velmar-port-tonnage-2022", client=sim_client(**{**CLEAN, "early_finish": 1.0}))
    assert any(s.meta.get("status") == "timeout" for s in steps)
    assert not score(get_task("velmar-port-tonnage-2022"), outcome.final_answer)


def test_a_timeout_is_retried():
    outcome, steps = run_task("velmar-port-tonnage-2022", client=sim_client(**CLEAN))
    statuses = [s.meta["status"] for s in steps if s.kind == "observation"]
    assert statuses == ["timeout", "ok"]
    assert score(get_task("velmar-port-tonnage-2022"), outcome.final_answer)


def test_rephrasing_in_circles_hits_the_step_budget():
    outcome, steps = run_task(
        "tollby-playhouse-seats", client=sim_client(**{**CLEAN, "rephrase": 1.0}), budget=Budget(max_steps=6)
    )
    assert (outcome.status, outcome.stopped_by) == ("failed", "max_steps")
    assert all(s.meta.get("status") == "empty" for s in steps if s.kind == "observation")
    assert steps[-1].kind == "intervention"
    assert steps[-1].meta["detector"] == "budget" and steps[-1].meta["tier"] == "stop"


def test_forgetting_repeats_the_last_action():
    _, steps = run_task(
        "salt-lantern-birthplace", client=sim_client(**{**CLEAN, "forget": 1.0}), budget=Budget(max_steps=4)
    )
    args = [s.args["query"] for s in steps if s.kind == "action"]
    assert len(args) >= 3 and len(set(args)) == 1


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_same_seed_same_run(mode, text_api):
    runs = [
        run_task("brightwell-net-profit-2023", client=sim_client(), mode=mode, text_api=text_api, seed=7)[1]
        for _ in range(2)
    ]
    assert signature(runs[0]) == signature(runs[1])


def test_different_seeds_give_different_runs():
    signatures = {
        tuple(signature(run_task("salt-lantern-birthplace", client=sim_client(), seed=seed)[1])) for seed in range(6)
    }
    assert len(signatures) > 1
    answers = {run_task("brightwell-net-profit-2023", client=sim_client(), seed=s)[0].final_answer for s in range(20)}
    assert len(answers) > 1  # knobs drawn from the seed: some reruns fall for the trap


def test_html_in_an_observation_stays_plain_text():
    _, steps = run_task("orchid-library-saturday", client=sim_client(**CLEAN))
    observation = next(s for s in steps if s.kind == "observation")
    assert '<script>var closes="00:00";' in observation.text


# --- parse errors ---------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_unparsable_output_gets_one_retry_then_fails(mode, text_api):
    outcome, steps = run_task(
        "salt-lantern-birthplace", client=sim_client(**{**CLEAN, "garble": 1.0}), mode=mode, text_api=text_api
    )
    assert outcome.status == "failed" and outcome.stopped_by is None
    assert "did not parse" in outcome.reason
    assert [s.kind for s in steps] == ["error", "error"]
    assert [s.meta["retry"] for s in steps] == [True, False]
    assert steps[0].text  # the raw output is kept


def test_tools_mode_recovers_after_one_correction():
    client = ScriptedClient(
        [
            chat_reply("I think the answer is somewhere."),
            chat_reply(None, [("finish", '{"answer": "Calder Bay"}')]),
        ]
    )
    outcome, steps = run_task("salt-lantern-birthplace", client=client)
    assert outcome.status == "succeeded" and outcome.final_answer == "Calder Bay"
    assert [s.kind for s in steps] == ["error", "final"]
    correction = client.requests[1]["messages"][-1]
    assert correction["role"] == "user" and "could not be used" in correction["content"]


def test_invalid_tool_arguments_are_a_parse_error():
    client = ScriptedClient([chat_reply(None, [("search", "{not json")]), chat_reply("still nothing")])
    outcome, steps = run_task("salt-lantern-birthplace", client=client)
    assert outcome.status == "failed"
    assert "not JSON" in steps[0].meta["reason"]


def test_text_mode_correction_is_an_observation_line():
    client = ScriptedClient([text_reply(" hmm"), text_reply(" ok\nFinal Answer: Calder Bay")])
    outcome, _ = run_task("salt-lantern-birthplace", client=client, mode="text")
    assert outcome.final_answer == "Calder Bay"
    assert "Observation: [format error]" in client.requests[1]["prompt"]
    assert client.requests[0]["stop"] == ["Observation:"]


def test_unknown_tool_is_an_error_observation_and_the_run_goes_on():
    client = ScriptedClient(
        [
            chat_reply(None, [("browse", '{"url": "x"}')]),
            chat_reply(None, [("finish", '{"answer": "x"}')]),
        ]
    )
    outcome, steps = run_task("salt-lantern-birthplace", client=client)
    assert outcome.status == "succeeded"
    assert steps[1].kind == "observation" and steps[1].meta["status"] == "error"
    assert "Unknown tool 'browse'" in steps[1].text


def test_usage_is_estimated_when_the_endpoint_reports_none():
    client = ScriptedClient([chat_reply(None, [("finish", '{"answer": "x"}')], usage=None)])
    _, steps = run_task("salt-lantern-birthplace", client=client)
    sent = json.dumps(client.requests[0]["messages"], ensure_ascii=False)
    assert steps[0].prompt_tokens == L.estimate_tokens(sent)
    client = ScriptedClient([chat_reply(None, [("finish", '{"answer": "x"}')], usage=usage(123, 4))])
    _, steps = run_task("salt-lantern-birthplace", client=client)
    assert (steps[0].prompt_tokens, steps[0].completion_tokens) == (123, 4)


# --- model errors -----------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_model_down_ends_with_error_quickly():
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{_closed_port()}/v1", api_key="x", max_retries=0, timeout=2)
    started = time.monotonic()
    outcome, steps = run_task("salt-lantern-birthplace", client=client)
    assert time.monotonic() - started < 5
    assert outcome.status == "error" and "cannot reach the model endpoint" in outcome.reason
    assert [s.kind for s in steps] == ["error"]
    assert steps[0].meta["source"] == "model" and steps[0].text == outcome.reason


def test_model_timeout_ends_with_error():
    class Slow(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            time.sleep(1.0)
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="x", max_retries=0)
        task = get_task("salt-lantern-birthplace")
        steps = []
        outcome = run_agent(
            client=client,
            config=AgentConfig(request_timeout=0.2),
            prompt=task["prompt"],
            tools=default_tools(CorpusSearch(load_documents())),
            sink=steps.append,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.status == "error" and "timed out" in outcome.reason
    assert steps[-1].meta["error"] == "APITimeoutError"


def test_http_error_from_the_model_ends_with_error():
    transport = httpx.MockTransport(lambda request: httpx.Response(503, json={"error": {"message": "overloaded"}}))
    client = openai.OpenAI(
        base_url="http://x.invalid/v1", api_key="x", max_retries=0, http_client=httpx.Client(transport=transport)
    )
    outcome, steps = run_task("salt-lantern-birthplace", client=client)
    assert outcome.status == "error" and "HTTP 503" in outcome.reason
    assert steps[0].kind == "error"


# --- budgets and stops ----------------------------------------------------------------


def test_step_budget_both_sides():
    ok, _ = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), budget=Budget(max_steps=3))
    assert ok.status == "succeeded"
    cut, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), budget=Budget(max_steps=2))
    assert (cut.status, cut.stopped_by) == ("failed", "max_steps")
    last = steps[-1]
    assert last.kind == "intervention" and last.meta["detector"] == "budget" and last.meta["tier"] == "stop"
    assert last.meta["evidence"]["limit"] == "max_steps" and last.meta["evidence"]["turns"] == 2


def test_token_budget_both_sides():
    _, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN))
    used = sum(s.prompt_tokens + s.completion_tokens for s in steps)
    ok, _ = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), budget=Budget(max_tokens=used + 1))
    assert ok.status == "succeeded"
    cut, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), budget=Budget(max_tokens=50))
    assert (cut.status, cut.stopped_by) == ("failed", "token_budget")
    assert steps[-1].meta["evidence"]["limit"] == "token_budget"


def test_should_stop_is_checked_between_steps():
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) > 2

    outcome, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), should_stop=should_stop)
    assert (outcome.status, outcome.stopped_by) == ("stopped", "user")
    assert steps[-1].kind == "intervention" and steps[-1].meta["detector"] == "user"
    assert any(s.kind == "observation" for s in steps) and not any(s.kind == "final" for s in steps)


# --- history: resume and fork ---------------------------------------------------------


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_history_continues_numbering_and_context(mode, text_api):
    full_outcome, full = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), mode=mode, text_api=text_api)
    _, first = run_task(
        "salt-lantern-birthplace", client=sim_client(**CLEAN), mode=mode, text_api=text_api, budget=Budget(max_steps=1)
    )
    assert first[-1].meta["detector"] == "budget"
    outcome, rest = run_task(
        "salt-lantern-birthplace",
        client=sim_client(**CLEAN),
        mode=mode,
        text_api=text_api,
        history=first,
    )
    assert rest[0].index == len(first)
    assert [s.index for s in rest] == list(range(len(first), len(first) + len(rest)))
    assert outcome.final_answer == full_outcome.final_answer
    # The resumed run did not repeat the first search: its context had it.
    resumed_actions = [s.args for s in first + rest if s.kind == "action"]
    assert resumed_actions == [s.args for s in full if s.kind == "action"]


def test_fork_from_a_middle_step():
    _, full = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN))
    fork_at = next(s.index for s in full if s.kind == "observation")
    outcome, rest = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN), history=full[: fork_at + 1])
    assert rest[0].index == fork_at + 1 and outcome.status == "succeeded"


# --- watchdog -------------------------------------------------------------------------


class HintThenStop:
    def __init__(self):
        self.seen = []

    def observe(self, step):
        self.seen.append(step)
        observations = [s for s in self.seen if s.kind == "observation"]
        if step.kind == "observation" and len(observations) == 1:
            return Intervention("repetition", "hint", "You tried this; change approach.", {"similar": [1]})
        if step.kind == "observation" and len(observations) == 2:
            return Intervention("drift", "stop", "No progress.", {"coverage": 0.1})
        return None


@pytest.mark.parametrize(("mode", "text_api"), MODES)
def test_watchdog_hint_is_injected_and_stop_finishes(mode, text_api):
    client, bodies = recording_sim_client(**CLEAN)
    watchdog = HintThenStop()
    outcome, steps = run_task("salt-lantern-birthplace", client=client, mode=mode, text_api=text_api, watchdog=watchdog)
    assert [s.index for s in watchdog.seen] == [s.index for s in steps]  # every step, in order
    interventions = [s for s in steps if s.kind == "intervention"]
    assert [s.meta["tier"] for s in interventions] == ["hint", "stop"]
    assert interventions[0].meta["detector"] == "repetition" and interventions[0].meta["evidence"] == {"similar": [1]}
    assert interventions[0].text == "You tried this; change approach."
    second_request = json.dumps(bodies[1], ensure_ascii=False)
    if mode == "tools":
        assert bodies[1]["messages"][-1] == {
            "role": "user",
            "content": "[watchdog hint] You tried this; change approach.",
        }
    else:
        assert "Observation: [watchdog hint] You tried this; change approach." in second_request
    assert (outcome.status, outcome.stopped_by) == ("stopped", "watchdog")
    assert steps[-1].kind == "final" and steps[-1].meta["fallback"] is True
    assert outcome.final_answer == steps[-1].text


def test_a_hint_between_action_and_observation_waits_for_the_tool_result():
    class HintOnAction:
        def observe(self, step):
            if step.kind == "action" and step.index < 3:
                return Intervention("repetition", "hint", "Careful.", {})
            return None

    client, bodies = recording_sim_client(**CLEAN)
    outcome, steps = run_task("salt-lantern-birthplace", client=client, watchdog=HintOnAction())
    assert outcome.status == "succeeded"
    roles = [m["role"] for m in bodies[1]["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"]


# --- observation preparation ------------------------------------------------------------


def test_default_prepare_truncates_both_sides():
    text, meta = default_prepare_observation("search", ToolResult("x" * L.MAX_OBSERVATION_CHARS))
    assert text == "x" * L.MAX_OBSERVATION_CHARS and meta["truncated"] is False
    text, meta = default_prepare_observation("search", ToolResult("x" * (L.MAX_OBSERVATION_CHARS + 1), "ok"))
    assert meta == {"status": "ok", "tool": "search", "truncated": True, "chars": L.MAX_OBSERVATION_CHARS + 1}
    assert text.startswith("x" * L.MAX_OBSERVATION_CHARS) and "truncated" in text


def test_prepare_observation_hook_feeds_the_model_and_keeps_the_full_text():
    def prepare(tool, result):
        return "[quoted data] " + result.text[:20], {"status": result.status, "tool": tool, "class": "usable"}

    client, bodies = recording_sim_client(**CLEAN)
    _, steps = run_task("salt-lantern-birthplace", client=client, prepare_observation=prepare)
    observation = next(s for s in steps if s.kind == "observation")
    assert observation.meta["class"] == "usable" and len(observation.text) > 20
    tool_message = next(m for m in bodies[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "[quoted data] " + observation.text[:20]


@pytest.mark.parametrize(
    ("raw", "thought", "call", "final"),
    [
        (
            " I need the author.\nAction: search[The Salt Lantern]\n",
            "I need the author.",
            ("search", "The Salt Lantern"),
            None,
        ),
        ("Thought: x\nAction 2: Search[Paramore].", "x", ("Search", "Paramore"), None),
        ('\nAction: lookup["born"]', "", ("lookup", "born"), None),
        (" Done.\nFinal Answer: Calder Bay\n", "Done.", None, "Calder Bay"),
        (" ok\nAction: finish[Calder Bay]", "ok", None, "Calder Bay"),
    ],
)
def test_parse_text_output(raw, thought, call, final):
    turn = L.parse_text_output(raw)
    assert not turn.problem
    assert turn.thought == thought and turn.final == final
    assert [(c.tool, c.args) for c in turn.calls] == ([call] if call else [])


def test_parse_text_output_without_action_or_answer_is_a_problem():
    assert L.parse_text_output(" I wonder what to do.").problem
