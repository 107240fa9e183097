"""What well-known agent frameworks wrap around the text a user reads. Pure.

Instrumentations put a framework's own objects into ``input.value`` /
``output.value`` as JSON: LangGraph its message state (``{"messages": [["user",
"…"]]}`` in, every message serialised out) and LangChain ToolMessages
(``{"type": "tool", "data": {"content": …}}``), smolagents its ``run()``
arguments (``{"task": …, "stream": false}``) and tool calls
(``{"args": [], "kwargs": {…}}``), the openai-agents SDK whole Responses-API
objects. Shown as they are, the prompt (the goal the detectors judge against)
is JSON, the final answer is the whole state and a tool result carries ids and
token counts that defeat the repetition and anchoring detectors.

Every function here falls back to the value as text when it does not recognise
the shape (a framework version that renamed something, text that is not valid
JSON): an unknown payload is shown raw, never dropped.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from tracing.core import shown_json

# LangChain message types, as serialised by ``messages_to_dict`` ("type") or
# by ``dumpd`` (the class name in "id"), to chat roles.
_LC_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "tool": "tool",
             "system": "system", "function": "tool", "humanmessage": "user", "aimessage": "assistant",
             "aimessagechunk": "assistant", "toolmessage": "tool", "systemmessage": "system"}


def parse(value: Any) -> Any:
    """JSON text as data (invalid JSON stays text); anything else as it is."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"'):
            # Nested past the bound (5,000 deep): kept as the text it is, which every page shows.
            return shown_json.parse(text, default=value)
    return value


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _content_text(content: Any) -> str:
    """A message's content: a string, or a list of typed parts (text / output_text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "output_text", "input_text"):
                texts.append(as_text(part.get("text")))
        return "\n".join(t for t in texts if t)
    return as_text(content)


def message(value: Any) -> dict[str, Any] | None:
    """One chat message in any of the serialisations frameworks use, as
    ``{"role", "content", "tool_call_id", "status", "calls"}``; None when it is not one."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
        role = _LC_ROLES.get(value[0].lower())  # LangGraph's ("user", "…") tuples
        return {"role": role, "content": value[1], "tool_call_id": "", "status": "", "calls": []} if role else None
    if not isinstance(value, dict):
        return None
    body = value
    kind = value.get("type")
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):  # langchain dumpd
        ids = value.get("id")
        kind = ids[-1] if isinstance(ids, list) and ids else value["kwargs"].get("type")
        body = value["kwargs"]
    elif isinstance(value.get("data"), dict) and isinstance(kind, str):  # messages_to_dict
        body = value["data"]
    role = _LC_ROLES.get(str(kind or "").lower()) or _LC_ROLES.get(str(body.get("role") or "").lower())
    if role is None or "content" not in body:
        return None
    calls = []
    for call in body.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            calls.append({"id": str(call.get("id") or ""), "name": str(fn.get("name") or ""),
                          "arguments": fn.get("arguments", fn.get("args"))})
    return {"role": role, "content": _content_text(body.get("content")),
            "tool_call_id": str(body.get("tool_call_id") or ""), "status": str(body.get("status") or ""),
            "calls": calls}


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """A message list (or a state dict holding one under "messages"), else None."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list) or not value:
        return None
    if isinstance(value[0], list) and message(value[0]) is None and all(isinstance(v, list) for v in value):
        value = [m for batch in value for m in batch]  # LangChain's batched [[...]] form
    found = [message(v) for v in value]
    if any(m is None for m in found):
        return None
    return found  # type: ignore[return-value]


def task_text(value: Any) -> str:
    """A root span's input as the task a user typed.

    LangGraph: the last user message of the state; smolagents: ``task``;
    openai-agents: the Responses input list's user text; else the text as sent.
    """
    data = parse(value)
    if isinstance(data, dict):
        for key in ("task", "input", "query", "question", "prompt"):
            if isinstance(data.get(key), str):
                return data[key]
    msgs = _messages(data)
    if msgs:
        users = [m["content"] for m in msgs if m["role"] == "user" and m["content"]]
        if users:
            return users[-1]
    if isinstance(data, dict) and len(data) == 1:
        only = next(iter(data.values()))
        if isinstance(only, str):
            return only
        if isinstance(only, dict) and only:
            # One wrapper key around the arguments (DSPy's {"input_args": {"question": …}}).
            inner = task_text(only)
            return inner if inner != as_text(only) else as_text(value)
    return as_text(value)


def known_task(value: Any) -> str | None:
    """task_text, or None for a structure it does not recognise (LlamaIndex's
    whole workflow state as ``{"init_state": …}``): the model's first user
    message is then the better prompt; plain text is the task as sent."""
    data = parse(value)
    text = task_text(value)
    if isinstance(data, (dict, list)) and text == as_text(value):
        return None
    return text


# A Python object's repr (``StopEvent(result=AgentOutput(response=…))``): what
# an instrumentation records for a framework object it cannot serialise, often
# cut short. Not text a user reads.
_REPR_RE = re.compile(r"^[A-Z][A-Za-z0-9_]*\((?:[a-z_][a-z0-9_]*=|\))")
_REPR_TEXT_RE = re.compile(r"""\b(?:text|content)=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")


def is_object_repr(value: Any) -> bool:
    return isinstance(value, str) and _REPR_RE.match(value.strip()) is not None


def _repr_text(text: str) -> str:
    """The last complete quoted ``text=`` / ``content=`` inside an object's repr, else ""."""
    found = [(f"'{a}'" if a else f'"{b}"') for a, b in _REPR_TEXT_RE.findall(text) if a or b]
    if not found:
        return ""
    try:
        return str(ast.literal_eval(found[-1]))  # the repr's own escapes (\\n, \\') undone
    except (ValueError, SyntaxError):
        return found[-1][1:-1]


def answer_text(value: Any) -> str:
    """A root span's output as the answer a user reads.

    A message state: its last assistant message; a Responses-API object: its
    output text; ``{"output": …}`` / ``{"answer": …}``; else the text as sent.
    """
    data = parse(value)
    response = response_message(data)
    if response is not None and response["content"]:
        return response["content"]
    msgs = _messages(data)
    if msgs:
        said = [m["content"] for m in msgs if m["role"] == "assistant" and m["content"]]
        if said:
            return said[-1]
    single = message(data)
    if single is not None and single["role"] == "assistant":
        return single["content"]
    if isinstance(data, dict):
        for key in ("output", "answer", "final_answer", "result", "final_output"):
            if isinstance(data.get(key), str):
                return data[key]
    if is_object_repr(data):
        return _repr_text(data)
    if isinstance(data, str):
        return data
    return as_text(value)


def tool_result(value: Any) -> tuple[str, str, str]:
    """A tool span's output as (text, status, tool call id): a serialised
    ToolMessage (LangChain / LangGraph) gives its content, its status
    ("error" when the tool raised) and the call it answers."""
    data = parse(value)
    if isinstance(data, dict) and isinstance(data.get("messages"), list) and len(data["messages"]) == 1:
        data = data["messages"][0]
    msg = message(data)
    if msg is not None and msg["role"] == "tool":
        return msg["content"], "error" if msg["status"] == "error" else "", msg["tool_call_id"]
    if isinstance(data, dict) and "raw_output" in data and "tool_name" in data:
        # LlamaIndex's ToolOutput ({"blocks", "tool_name", "raw_input",
        # "raw_output", "is_error"}): the tool's own return value is raw_output.
        return as_text(data["raw_output"]), "error" if data.get("is_error") is True else "", ""
    if isinstance(data, str):
        return data, "", ""  # a JSON-encoded string (DSPy's tool output): the string itself
    return as_text(value), "", ""


# DSPy's adapters make the model answer in fields: "[[ ## next_thought ## ]]\n…".
_FIELD_RE = re.compile(r"^\[\[ ## (\w+) ## \]\][ \t]*$", re.M)
_THOUGHT_FIELDS = ("next_thought", "reasoning", "thought", "rationale")


def field_message(msg: dict[str, Any]) -> dict[str, Any]:
    """An assistant message written in DSPy's field protocol as what it means:
    the thought, the tool call (``next_tool_name`` / ``next_tool_args``) and the
    answer (any other output field). Other messages are returned as they are."""
    content = msg.get("content") or ""
    marks = list(_FIELD_RE.finditer(content))
    if msg.get("calls") or not marks or content[: marks[0].start()].strip():
        return msg
    fields = {m[1]: content[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(content)].strip()
              for i, m in enumerate(marks)}
    fields.pop("completed", None)
    thought = next((fields.pop(k) for k in _THOUGHT_FIELDS if k in fields), "")
    name, args = fields.pop("next_tool_name", ""), fields.pop("next_tool_args", None)
    calls = [{"id": "", "name": name, "arguments": parse(args) if args else {}}] if name else []
    return {**msg, "content": "\n".join(v for v in fields.values() if v), "calls": calls,
            "reasoning": "\n".join(t for t in (msg.get("reasoning", ""), thought) if t)}


def tool_args(value: Any) -> Any:
    """A tool span's input as the call's arguments: smolagents wraps them as
    ``{"args": [...], "kwargs": {...}, "sanitize_inputs_outputs": …}``, LlamaIndex
    and DSPy as ``{"kwargs": {...}}`` alone."""
    data = parse(value)
    if isinstance(data, dict) and set(data) == {"kwargs"} and isinstance(data["kwargs"], dict):
        return data["kwargs"]
    if isinstance(data, dict) and "kwargs" in data and "args" in data and isinstance(data["kwargs"], dict):
        args = data["args"]
        if not args:
            return data["kwargs"]
        if not data["kwargs"]:
            return args[0] if isinstance(args, list) and len(args) == 1 else args
    return data


def response_message(value: Any) -> dict[str, Any] | None:
    """An openai Responses-API object (``{"object": "response", "output": [...]}``)
    as one assistant message: its ``output_text`` parts, reasoning summaries and
    ``function_call`` items. None when it is not one."""
    data = parse(value)
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        return None
    if data.get("object") not in ("response", None) or "output" not in data:
        return None
    texts, thoughts, calls = [], [], []
    for item in data["output"]:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            texts.append(_content_text(item.get("content")))
        elif kind == "function_call":
            calls.append({"id": str(item.get("call_id") or item.get("id") or ""), "name": str(item.get("name") or ""),
                          "arguments": item.get("arguments")})
        elif kind == "reasoning":
            for part in item.get("summary") or []:
                if isinstance(part, dict):
                    thoughts.append(as_text(part.get("text")))
    if not (texts or thoughts or calls) and data.get("object") != "response":
        return None
    return {"role": "assistant", "content": "\n".join(t for t in texts if t), "tool_call_id": "", "calls": calls,
            "reasoning": "\n".join(t for t in thoughts if t)}
