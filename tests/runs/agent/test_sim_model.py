from __future__ import annotations

import json
import threading

import openai
import pytest
from helpers_agent import CLEAN, run_task

from runs.agent import sim_model as S
from runs.agent.loop import AgentConfig, Budget, run_agent
from runs.agent.sim_server import make_server, sim_client
from runs.agent.suite import get_task, load_documents, score
from runs.agent.tools import CorpusSearch, FinishTool, ToolRegistry, ToolResult, default_tools
from tracing.core.steps import Intervention


def post(path, body):
    return S.handle("POST", path, json.dumps(body).encode())


def test_chat_completion_is_openai_shaped_and_labelled():
    task = get_task("salt-lantern-birthplace")
    response = sim_client(**CLEAN).chat.completions.create(
        model="anything",
        messages=[{"role": "user", "content": task["prompt"]}],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "search",
                    "parameters": {
                        "type": "object",
                        "properties": {"query": {"type": "string"}},
                        "required": ["query"],
                    },
                },
            }
        ],
        seed=1,
    )
    assert response.model == "sim" and response.system_fingerprint == "simulated"
    call = response.choices[0].message.tool_calls[0]
    assert call.function.name == "search" and json.loads(call.function.arguments) == {"query": "The Salt Lantern novel"}
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


def test_completion_honours_stop_sequences():
    prompt = "Question: How long is the Lumen Bridge, in metres?\nThought:"
    status, free = post("/v1/completions", {"prompt": prompt, "seed": 1, "sim": CLEAN})
    assert status == 200 and "Observation:" in free["choices"][0]["text"]  # a base model runs on
    status, stopped = post("/v1/completions", {"prompt": prompt, "seed": 1, "sim": CLEAN, "stop": ["Observation:"]})
    text = stopped["choices"][0]["text"]
    assert "Observation" not in text and "Action: search[Lumen Bridge]" in text
    assert stopped["model"] == "sim" and stopped["object"] == "text_completion"


def test_models_endpoint_and_unknown_routes():
    status, payload = S.handle("GET", "/v1/models", b"")
    assert status == 200 and payload["data"][0]["id"] == "sim" and payload["data"][0]["owned_by"] == "simulated"
    assert S.handle("POST", "/v1/embeddings", b"{}")[0] == 404


@pytest.mark.parametrize(
    "body",
    [
        {"prompt": "Question: x", "sim": {"forget": 2}},
        {"prompt": "Question: x", "sim": {"curiosity": 0.5}},
        {"prompt": "Question: x", "seed": "one"},
        {"prompt": 42},
    ],
)
def test_bad_requests_are_400(body):
    status, payload = post("/v1/completions", body)
    assert status == 400 and payload["error"]["message"]


def test_bad_json_is_400():
    assert S.handle("POST", "/v1/completions", b"{nope")[0] == 400


def test_knobs_are_drawn_from_the_seed_when_not_given():
    assert S.resolve_knobs({}, 1) == S.resolve_knobs({}, 1)
    assert S.resolve_knobs({}, 1) != S.resolve_knobs({}, 2)
    drawn = S.resolve_knobs({"forget": 0.9}, 5)
    assert drawn["forget"] == 0.9 and drawn[S.GARBLE] == 0.0
    assert all(0 <= drawn[k] < S.KNOB_CEILINGS[k] for k in S.KNOBS if k != "forget")


def test_task_identification():
    assert (
        S.find_task("In which town was the author of the novel The Salt Lantern born?")["slug"]
        == "salt-lantern-birthplace"
    )
    # Reworded slightly: matched on token overlap.
    assert S.find_task("In which town was the author of the novel The Salt Lantern really born")["slug"] == (
        "salt-lantern-birthplace"
    )
    assert S.find_task("What is the capital of Freedonia?") is None


def test_unknown_question_searches_then_answers():
    steps = []
    outcome = run_agent(
        client=sim_client(**CLEAN),
        config=AgentConfig(seed=1),
        prompt="Tell me about Mirefield wool fair",
        tools=default_tools(CorpusSearch(load_documents())),
        sink=steps.append,
    )
    assert outcome.status == "succeeded"
    assert [s.kind for s in steps if s.kind != "thought"] == ["action", "observation", "final"]
    assert "Mirefield" in outcome.final_answer


def test_thoughts_quote_the_observation_they_used():
    _, steps = run_task("salt-lantern-birthplace", client=sim_client(**CLEAN))
    thoughts = [s.text for s in steps if s.kind == "thought"]
    assert "written by Orren Vasquel" in thoughts[1]
    assert "born in Calder Bay" in thoughts[2]


def test_ignore_hint_knob_both_sides():
    class HintAfterEmpty:
        def observe(self, step):
            if step.kind == "observation" and step.meta.get("status") == "empty":
                return Intervention("invalid", "hint", "Empty again: change approach.", {})
            return None

    # Rephrasing in circles; a hint that is obeyed breaks the circle.
    base = {**CLEAN, "rephrase": 1.0}
    obeyed, _ = run_task(
        "tollby-playhouse-seats", client=sim_client(**{**base, "ignore_hint": 0.0}), watchdog=HintAfterEmpty()
    )
    assert score(get_task("tollby-playhouse-seats"), obeyed.final_answer)
    ignored, _ = run_task(
        "tollby-playhouse-seats",
        client=sim_client(**{**base, "ignore_hint": 1.0}),
        watchdog=HintAfterEmpty(),
        budget=Budget(max_steps=6),
    )
    assert ignored.stopped_by == "max_steps"


def test_real_http_server_serves_the_loop():
    server = make_server("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="sim", max_retries=0)
        assert client.models.list().data[0].id == "sim"
        for mode in ("tools", "text"):
            outcome, _ = run_task("zh-wugang-author-birthplace", client=client, mode=mode)
            assert outcome.final_answer is not None
    finally:
        server.shutdown()
        server.server_close()


def test_timeouts_are_retried_up_to_the_limit():
    class AlwaysTimesOut:
        name, description, text_arg, side_effect = "search", "search", "query", False
        parameters = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

        def __call__(self, args):
            return ToolResult("Search timed out after 10 s: the source did not answer.", "timeout")

    tools = ToolRegistry([AlwaysTimesOut(), FinishTool()])
    outcome, steps = run_task("velmar-port-tonnage-2022", client=sim_client(**CLEAN), tools=tools)
    searches = [s for s in steps if s.kind == "action"]
    assert len(searches) == 1 + S.MAX_TIMEOUT_RETRIES  # first try, then the retries, then it gives up
    assert outcome.status == "succeeded" and not score(get_task("velmar-port-tonnage-2022"), outcome.final_answer)
