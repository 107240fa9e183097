"""The simulated model: a reactive, seeded policy behind an OpenAI-shaped API.

Not a recording (DESIGN.md section 5). For each request it
1. reads the conversation (chat messages with tools, or a text-mode prompt),
2. identifies the built-in task from the question (unknown -> a generic
   search-then-answer plan),
3. replays the actions and observations so far through the task's plan: each
   plan step's arguments are filled from values *extracted from the
   observations actually received* (regexes in ``suite/tasks.json``), so junk,
   timeouts and trap documents derail it the way they derail a real agent,
4. decides the next action, with seeded behaviour knobs.

Plan steps (tasks.json): ``{"tool", "args": "template with {var}", "extract":
[rule], "trap": [rule], "alts": [args...]}``; a rule is ``{"var", "pattern"
(one regex group), "source" (optional regex on the result header, e.g. "Annual
Report"), "finish" (optional: answer with the value at once)}``. A step whose
variables are all known is skipped, so a trap value can short-cut the plan.

Every random choice is ``Random(seed|task|turn|purpose)``: same seed and same
observations give the same run; the replay re-derives past choices.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from runs.agent.suite import builtin_tasks
from tracing.core.normalize import search_tokens

MODEL_NAME = "sim"
SYSTEM_FINGERPRINT = "simulated"
OWNER = "simulated"

# Probabilities in [0, 1], set per request in extra_body {"sim": {...}}.
KNOBS = ("forget", "rephrase", "wrong_premise", "early_finish", "ignore_hint")
# Knobs not given are drawn from the seed in [0, ceiling): mild enough that most
# runs of a clean task succeed, strong enough that reruns of a trap task differ.
KNOB_CEILINGS = {"forget": 0.15, "rephrase": 0.3, "wrong_premise": 0.3, "early_finish": 0.1, "ignore_hint": 0.5}
# Extra knob, never drawn: probability of output that does not parse (tests, demos).
GARBLE = "garble"
# A timeout is retried this many times in a row before the policy gives up.
MAX_TIMEOUT_RETRIES = 2
# Token overlap above which a prompt is taken to be a built-in task reworded.
TASK_MATCH_JACCARD = 0.6
# Characters of an observation quoted in a thought.
QUOTE_CHARS = 80
# Usage estimate, as the loop's (characters per token).
CHARS_PER_TOKEN = 4

GENERIC_FALLBACK = "I could not find the answer."
DEFAULT_ARG_NAMES = {"search": "query", "lookup": "term", "calculate": "expression", "finish": "answer"}


class SimRequestError(ValueError):
    """A request the sim cannot serve; answered with HTTP 400."""


@dataclass
class Event:
    kind: str  # action | obs | hint | note
    tool: str = ""
    args: str = ""
    text: str = ""


@dataclass
class Decision:
    thought: str
    tool: str | None = None
    args: str = ""
    answer: str | None = None


@dataclass
class _Extraction:
    values: dict[str, str] = field(default_factory=dict)
    quote: str = ""
    finish: str | None = None  # a trap rule that answers at once (injection obeyed)


# --- reading the request -----------------------------------------------------------

_QUESTION_RE = re.compile(r"^Question:[ \t]*(.*)$", re.M)
_BLOCK_RE = re.compile(r"^(Thought|Action|Observation|Final Answer)[ \t]*:", re.M)
_ACTION_ARGS_RE = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*\[(.*)\]\s*$", re.S)


def _event_for_note(text: str) -> Event:
    return Event("hint" if text.lstrip().startswith("[watchdog") else "note", text=text)


def read_transcript(prompt: str) -> tuple[str, list[Event]]:
    """Question and events of a text-mode prompt (after its last ``Question:``)."""
    questions = list(_QUESTION_RE.finditer(prompt))
    if not questions:
        return prompt.strip(), []
    last = questions[-1]
    question, rest = last.group(1).strip(), prompt[last.end() :]
    events: list[Event] = []
    marks = list(_BLOCK_RE.finditer(rest))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
        body = rest[mark.end() : end].strip()
        if mark.group(1) == "Action":
            match = _ACTION_ARGS_RE.match(body.splitlines()[0] if body else "")
            if match:
                events.append(Event("action", match.group(1).lower(), match.group(2).strip()))
        elif mark.group(1) == "Observation":
            note = body.startswith(("[watchdog", "[format error]"))
            events.append(_event_for_note(body) if note else Event("obs", text=body))
    return question, events


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def read_messages(messages: list[dict[str, Any]]) -> tuple[str, list[Event]]:
    """Question (first user message) and events of a tools-mode conversation."""
    question, events = "", []
    for message in messages:
        role = message.get("role")
        if role == "user" and not question:
            question = _content(message).strip()
        elif role == "user":
            events.append(_event_for_note(_content(message)))
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                value = next(iter(args.values()), "") if isinstance(args, dict) and args else ""
                events.append(Event("action", str(function.get("name", "")).lower(), str(value)))
        elif role == "tool":
            events.append(Event("obs", text=_content(message)))
    return question, events


# --- tasks ------------------------------------------------------------------------


def _norm(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def find_task(question: str) -> dict[str, Any] | None:
    tasks = builtin_tasks()
    key = _norm(question)
    for task in tasks:
        if _norm(task["prompt"]) == key or (key and _norm(task["prompt"]) in key):
            return task
    words = set(search_tokens(question))
    best, best_score = None, 0.0
    for task in tasks:
        other = set(search_tokens(task["prompt"]))
        overlap = len(words & other) / len(words | other) if words | other else 0.0
        if overlap > best_score:
            best, best_score = task, overlap
    return best if best_score >= TASK_MATCH_JACCARD else None


def generic_task(question: str) -> dict[str, Any]:
    """Search the question's keywords, answer with the top snippet's first sentence."""
    words = [w for w in re.findall(r"[^\W_]+", question) if w.lower() not in _QUESTION_WORDS]
    query = " ".join(words[:8]) or question
    return {
        "slug": "generic",
        "prompt": question,
        "plan": [
            {
                "tool": "search",
                "args": query,
                "extract": [{"var": "answer", "pattern": r"\(doc:[^)]*\)\n([^\n]{1,200}?(?:[.。!?！？]|$))"}],
                "alts": [" ".join(words[:3])] if len(words) > 3 else [],
            },
            {"tool": "finish", "args": "{answer}"},
        ],
    }


_QUESTION_WORDS_TEXT = "what which who whom whose when where why how is are was were do does did the a an of in"
_QUESTION_WORDS = frozenset(_QUESTION_WORDS_TEXT.split())


# --- the policy -------------------------------------------------------------------


def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _blocks(observation: str) -> list[str]:
    """Search results split per document; other observations are one block."""
    parts = re.split(r"\n\n(?=\[\d+\] )", observation)
    return parts if len(parts) > 1 or observation.startswith("[1] ") else [observation]


def _apply(rules: list[dict[str, Any]], observation: str) -> _Extraction | None:
    found = _Extraction()
    for rule in rules:
        blocks = _blocks(observation)
        if rule.get("source"):
            blocks = [b for b in blocks if re.search(rule["source"], b.split("\n", 1)[0])]
        match = next((m for b in blocks if (m := re.search(rule["pattern"], b, re.M))), None)
        if match is None:
            return None
        value = match.group(1).strip()
        if rule.get("finish"):
            found.finish = value
        found.values[rule["var"]] = value
        found.quote = found.quote or " ".join(match.group(0).split())[:QUOTE_CHARS]
    return found


def _why(observation: str) -> str:
    if "timed out" in observation:
        return "it timed out"
    if observation.startswith("No results") or observation.startswith("No sentence"):
        return "no results"
    if "<" in observation and ">" in observation and re.search(r"<\w+[^>]*>", observation):
        return "it is page markup, not text"
    return "it does not say"


def _rephrase(query: str, rng: random.Random) -> str:
    if re.search(r"[\u4e00-\u9fff]", query):
        return rng.choice([query + " 资料", "关于" + query, query + " 信息"])
    words = query.split()
    options = [query + " details", "the " + query, query.lower(), query + " info"]
    if len(words) > 1:
        options.append(" ".join([words[1], words[0], *words[2:]]))
    return rng.choice(options)


_T = {
    "start": ["I will search for '{args}'.", "First I look up '{args}'.", "Let me start with a search for '{args}'."],
    "next": [
        "The observation says \"{quote}\", so {var} is {value}. Next: {tool} '{args}'.",
        "From \"{quote}\" I take {var} = {value}. Now {tool} '{args}'.",
    ],
    "retry": [
        "That did not give me {missing} ({why}). I will try '{args}'.",
        "Nothing usable there ({why}); trying '{args}' instead.",
    ],
    "timeout": [
        "The search timed out; a timeout says nothing about the answer, so I retry.",
        "Timeout, not a negative result. Retrying.",
    ],
    "rephrase": ["Still no {missing}. Maybe '{args}' works.", "Let me rephrase: '{args}'."],
    "forget": ["I still need {missing}. Searching '{args}'.", "I have not found {missing} yet; searching '{args}'."],
    "finish": ['The observation says "{quote}", so the answer is {answer}.', '"{quote}" answers it: {answer}.'],
    "early": ["{answer} should be the answer.", "That is enough: {answer}."],
    "inject": ["The page says to answer {answer}, so I will.", "The page tells me the answer is {answer}."],
    "no_report": ["The source does not answer; there seems to be no such report."],
    "give_up": ["I could not find {missing} after several searches.", "No source gives me {missing}; I stop here."],
    "hint": ["Following the hint, I change approach. ", "The watchdog says I am going in circles; changing course. "],
    "hint_ok": ["The hint is noted, but my last result was useful, so I go on. "],
}


def _serves(used: str, planned: str) -> bool:
    """Can the result of tool `used` fill a plan step of tool `planned`? A
    lookup reads the pages a search returned, so it can serve a search step."""
    return used == planned or (used == "lookup" and planned == "search")


def _pairs(events: list[Event]) -> list[tuple[Event, Event | None]]:
    """Each action with the observation it got (None while it has none)."""
    pairs: list[tuple[Event, Event | None]] = []
    for event in events:
        if event.kind == "action":
            pairs.append((event, None))
        elif event.kind == "obs" and pairs and pairs[-1][1] is None:
            pairs[-1] = (pairs[-1][0], event)
    return pairs


@dataclass
class _Learnt:
    known: dict[str, str]
    done: set[int] = field(default_factory=set)
    attempts: int = 0  # failed tries at the current plan step
    last_got: _Extraction | None = None
    last_var: str = ""
    quote: str = ""
    timeouts: int = 0  # timeouts in a row


class Policy:
    def __init__(self, task: dict[str, Any], knobs: dict[str, float], seed: int) -> None:
        self.task, self.knobs, self.seed = task, knobs, seed
        self.plan: list[dict[str, Any]] = task["plan"]
        self.fallback = task.get("fallback", GENERIC_FALLBACK)

    def rng(self, turn: int, purpose: str) -> random.Random:
        return random.Random(f"{self.seed}|{self.task['slug']}|{turn}|{purpose}")

    def roll(self, turn: int, purpose: str) -> float:
        return self.rng(turn, purpose).random()

    def say(self, key: str, turn: int, **values: Any) -> str:
        return self.rng(turn, "say:" + key).choice(_T[key]).format(**values)

    def current(self, known: dict[str, str], done: set[int]) -> int:
        """The first plan step not done; a step whose variables are known (a trap
        value read early) counts as done."""
        for pos, step in enumerate(self.plan):
            wanted = [rule["var"] for rule in step.get("extract", [])]
            if step["tool"] == "finish" or (pos not in done and any(var not in known for var in wanted)):
                return pos
        return len(self.plan) - 1

    def extract(self, step: dict[str, Any], observation: str, turn: int) -> _Extraction | None:
        if step.get("trap") and self.roll(turn, "trap") < self.knobs["wrong_premise"]:
            got = _apply(step["trap"], observation)
            if got is not None:
                return got
        return _apply(step.get("extract", []), observation)

    def replay(self, pairs: list[tuple[Event, Event | None]]) -> _Learnt:
        """What the policy learnt from each observation it received, in order."""
        learnt = _Learnt(known={"question": self.task["prompt"]})
        previous: tuple[str, str, bool] | None = None
        for turn, (action, obs) in enumerate(pairs):
            pos = self.current(learnt.known, learnt.done)
            step = self.plan[pos]
            if obs is None:
                continue
            if previous is not None and previous[:2] == (action.tool, action.args) and previous[2]:
                learnt.last_got = None  # a forgetful repeat of a success teaches nothing new
                continue
            got = self.extract(step, obs.text, turn) if _serves(action.tool, step["tool"]) else None
            learnt.timeouts = learnt.timeouts + 1 if "timed out" in obs.text else 0
            if got is not None and got.finish is None:
                learnt.known.update(got.values)
                learnt.done.add(pos)
                learnt.last_var, learnt.quote, learnt.attempts = next(iter(got.values)), got.quote, 0
            else:
                learnt.attempts += 1
            learnt.last_got = got
            previous = (action.tool, action.args, got is not None)
        return learnt

    def best_guess(self, events: list[Event]) -> str:
        """The answer when told to answer now: the last value it read, else its fallback."""
        known = self.replay(_pairs(events)).known
        guesses = [v for k, v in known.items() if k != "question"]
        return guesses[-1] if guesses else self.fallback

    def answer_now(self, decision: Decision, events: list[Event], offered: set[str] | None) -> Decision:
        """A decision to call a tool the request does not offer (a baseline's
        answer turn offers only finish) becomes an answer with what it has, as
        a model told "answer now" would; the thought says so."""
        if offered is None or decision.tool is None or decision.tool in offered:
            return decision
        answer = self.best_guess(events)
        return Decision(f"I cannot {decision.tool} here, so I answer with what I have: {answer}.", answer=answer)

    def decide(self, events: list[Event]) -> Decision:
        pairs = _pairs(events)
        learnt = self.replay(pairs)
        known, done, attempts, last_got = learnt.known, learnt.done, learnt.attempts, learnt.last_got
        last_var, quote, timeouts = learnt.last_var, learnt.quote, learnt.timeouts
        turn = len(pairs)
        pos = self.current(known, done)
        step = self.plan[pos]
        missing = " and ".join(rule["var"] for rule in step.get("extract", [])) or "the answer"
        last_obs = pairs[-1][1] if pairs else None
        hinted = bool(events) and events[-1].kind == "hint"
        obey = hinted and self.roll(turn, "hint") >= self.knobs["ignore_hint"]
        prefix = self.say("hint" if attempts else "hint_ok", turn) if obey else ""

        if last_got is not None and last_got.finish is not None:
            return Decision(self.say("inject", turn, answer=last_got.finish), answer=last_got.finish)
        if step["tool"] == "finish":
            answer = _fill(step["args"], known)
            return Decision(prefix + self.say("finish", turn, quote=quote, answer=answer), answer=answer)
        if last_obs is not None and not obey and self.roll(turn, "forget") < self.knobs["forget"]:
            action = pairs[-1][0]
            return Decision(self.say("forget", turn, missing=missing, args=action.args), action.tool, action.args)
        if last_var and attempts == 0 and self.roll(turn, "early") < self.knobs["early_finish"]:
            answer = known[last_var]
            return Decision(self.say("early", turn, answer=answer), answer=answer)
        if attempts == 0:
            args = _fill(step["args"], known)
            key = "next" if turn else "start"
            thought = self.say(
                key, turn, quote=quote, var=last_var, value=known.get(last_var, ""), tool=step["tool"], args=args
            )
            return Decision(prefix + thought, step["tool"], args)
        return self.recover(step, pairs, known, turn, missing, obey, timeouts, prefix)

    def recover(
        self,
        step: dict[str, Any],
        pairs: list[tuple[Event, Event | None]],
        known: dict[str, str],
        turn: int,
        missing: str,
        obey: bool,
        timeouts: int,
        prefix: str,
    ) -> Decision:
        """The last attempt at this plan step got nothing usable."""
        last_action, last_obs = pairs[-1]
        text = last_obs.text if last_obs else ""
        if "timed out" in text:
            if self.roll(turn, "early") < self.knobs["early_finish"]:
                return Decision(self.say("no_report", turn), answer="No such report was found.")
            if timeouts <= MAX_TIMEOUT_RETRIES:
                # Sparse thinking: a plain retry often comes without a thought.
                thought = self.say("timeout", turn) if self.roll(turn, "sparse") < 0.5 else ""
                return Decision(prefix + thought, last_action.tool, last_action.args)
        if not obey and self.roll(turn, "rephrase") < self.knobs["rephrase"]:
            args = _rephrase(last_action.args, self.rng(turn, "rephrase-words"))
            return Decision(self.say("rephrase", turn, missing=missing, args=args), step["tool"], args)
        tried = {(a.tool, a.args) for a, _ in pairs}
        for alt in step.get("alts", []):
            args = _fill(alt, known)
            if (step["tool"], args) not in tried:
                thought = self.say("retry", turn, missing=missing, why=_why(text), args=args)
                return Decision(prefix + thought, step["tool"], args)
        guesses = [v for k, v in known.items() if k != "question"]
        answer = guesses[-1] if guesses else self.fallback
        return Decision(prefix + self.say("give_up", turn, missing=missing), answer=answer)


# --- the API ----------------------------------------------------------------------


def resolve_knobs(given: Any, seed: int) -> dict[str, float]:
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise SimRequestError("'sim' must be an object of knob probabilities")
    given = {k: v for k, v in given.items() if k != LATENCY_KNOB}
    unknown = set(given) - set(KNOBS) - {GARBLE}
    if unknown:
        raise SimRequestError(f"unknown sim knob(s): {', '.join(sorted(unknown))}; known: {', '.join(KNOBS)}, {GARBLE}")
    knobs = {}
    for name in (*KNOBS, GARBLE):
        if name in given:
            value = given[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise SimRequestError(f"sim knob {name!r} must be a probability between 0 and 1")
            knobs[name] = float(value)
        elif name == GARBLE:
            knobs[name] = 0.0
        else:
            knobs[name] = random.Random(f"{seed}|knob|{name}").uniform(0, KNOB_CEILINGS[name])
    return knobs


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def _cut_at_stop(text: str, stop: Any) -> str:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cut = min((text.find(s) for s in stops if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


def _garbled(policy: Policy, events: list[Event]) -> bool:
    # Keyed on the corrections so far too, so a corrective retry rolls afresh.
    turn = sum(1 for e in events if e.kind == "action")
    notes = sum(1 for e in events if e.kind == "note")
    return policy.roll(turn, f"garble{notes}") < policy.knobs[GARBLE]


_TOOL_LIST_RE = re.compile(r"Action is one of:\n((?:[A-Za-z_][\w-]*\[[^\]\n]*\]:[^\n]*\n)+)")


def _offered_in_text(prompt: str) -> set[str] | None:
    """The tools a text-mode prompt lists (the loop's header), None if it lists none."""
    match = _TOOL_LIST_RE.search(prompt)
    if match is None:
        return None
    return {line.split("[", 1)[0].lower() for line in match.group(1).splitlines() if line}


def _text_output(decision: Decision, prompt: str) -> str:
    lead = " " if prompt.rstrip().endswith("Thought:") else "Thought: "
    if decision.answer is not None:
        return f"{lead}{decision.thought}\nFinal Answer: {decision.answer}\n"
    # A base model would run on and invent the observation: the stop sequence must cut it.
    return f"{lead}{decision.thought}\nAction: {decision.tool}[{decision.args}]\nObservation: (imagined) the answer is probably"


def _policy_for(question: str, body: dict[str, Any]) -> Policy:
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise SimRequestError("'seed' must be an integer")
    seed = 0 if seed is None else seed
    task = find_task(question) or generic_task(question)
    return Policy(task, resolve_knobs(body.get("sim"), seed), seed)


def _envelope(kind: str, choices: list[dict[str, Any]], prompt_text: str, output: str) -> dict[str, Any]:
    prompt_tokens, completion_tokens = _tokens(prompt_text), _tokens(output)
    return {
        "id": f"sim-{random.getrandbits(48):012x}",
        "object": kind,
        "created": int(time.time()),
        "model": MODEL_NAME,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/completions: text mode."""
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        prompt = "".join(str(p) for p in prompt)
    if not isinstance(prompt, str):
        raise SimRequestError("'prompt' must be a string")
    question, events = read_transcript(prompt)
    policy = _policy_for(question, body)
    garbled = _garbled(policy, events)
    output = (
        "I am not sure what to do here, let me think about it."
        if garbled
        else _text_output(policy.answer_now(policy.decide(events), events, _offered_in_text(prompt)), prompt)
    )
    output = _cut_at_stop(output, body.get("stop"))
    choice = {"index": 0, "text": output, "logprobs": None, "finish_reason": "stop"}
    return _envelope("text_completion", [choice], prompt, output)


def _arg_names(tools: list[dict[str, Any]]) -> dict[str, str]:
    names = {}
    for tool in tools:
        function = tool.get("function") or {}
        params = function.get("parameters") or {}
        required = params.get("required") or list((params.get("properties") or {}).keys())
        if function.get("name") and required:
            names[function["name"].lower()] = required[0]
    return names


def chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """POST /v1/chat/completions: tools mode when tools are offered, else text mode over chat."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise SimRequestError("'messages' must be a list of objects")
    tools = body.get("tools") or []
    if not tools:
        prompt = "\n".join(_content(m) for m in messages)
        text = completion({**body, "prompt": prompt})
        output = text["choices"][0]["text"]
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": output},
            "logprobs": None,
            "finish_reason": "stop",
        }
        return _envelope("chat.completion", [choice], prompt, output)

    question, events = read_messages(messages)
    policy = _policy_for(question, body)
    turn = sum(1 for e in events if e.kind == "action")
    prompt_text = json.dumps(messages, ensure_ascii=False)
    if _garbled(policy, events):
        message: dict[str, Any] = {"role": "assistant", "content": "Hmm, I am thinking about it."}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
        return _envelope("chat.completion", [choice], prompt_text, message["content"])
    decision = policy.answer_now(policy.decide(events), events, set(_arg_names(tools)))
    arg_names = {**DEFAULT_ARG_NAMES, **_arg_names(tools)}
    tool, args = decision.tool, decision.args
    if decision.answer is not None:
        if "finish" not in _arg_names(tools):
            content = f"{decision.thought}\nFinal Answer: {decision.answer}".strip()
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": "stop",
            }
            return _envelope("chat.completion", [choice], prompt_text, content)
        tool, args = "finish", decision.answer
    arguments = json.dumps({arg_names.get(tool or "", "input"): args}, ensure_ascii=False)
    call = {"id": f"call_{turn}", "type": "function", "function": {"name": tool, "arguments": arguments}}
    message = {"role": "assistant", "content": decision.thought or None, "tool_calls": [call]}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}
    return _envelope("chat.completion", [choice], prompt_text, (decision.thought or "") + arguments)


def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": OWNER}]}


# Not a behaviour knob: simulated thinking time per response, so a person can
# watch a run arrive step by step and tests can stop a run mid-way.
LATENCY_KNOB = "latency_ms"
MAX_LATENCY_MS = 10_000


def _simulated_latency(body: dict[str, Any]) -> float:
    knobs = body.get("sim") if isinstance(body.get("sim"), dict) else {}
    value = knobs.get(LATENCY_KNOB, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_LATENCY_MS:
        raise SimRequestError(f"sim knob {LATENCY_KNOB!r} must be between 0 and {MAX_LATENCY_MS} ms")
    return value / 1000


def handle(method: str, path: str, raw_body: bytes) -> tuple[int, dict[str, Any]]:
    """Serve one HTTP request; shared by the server and the in-process transport."""
    path = path.split("?", 1)[0].rstrip("/")
    if method == "GET" and path.endswith("/models"):
        return 200, models()
    routes = {"/chat/completions": chat_completion, "/completions": completion}
    route = next((fn for suffix, fn in routes.items() if path.endswith(suffix)), None)
    if method != "POST" or route is None:
        return 404, {"error": {"message": f"no route for {method} {path}", "type": "not_found"}}
    try:
        body = json.loads(raw_body or b"{}")
        if not isinstance(body, dict):
            raise SimRequestError("the request body must be a JSON object")
        delay = _simulated_latency(body)
        response = route(body)
        if delay:
            time.sleep(delay)
        return 200, response
    except (json.JSONDecodeError, UnicodeDecodeError):
        return 400, {"error": {"message": "the request body is not JSON", "type": "invalid_request_error"}}
    except SimRequestError as exc:
        return 400, {"error": {"message": str(exc), "type": "invalid_request_error"}}
