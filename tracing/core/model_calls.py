"""What one model turn sent and got back, as the agent loop hands it over.

Plain Python (the loop is Django-free); ``tracing.store.call_store`` writes it to
Postgres with the messages shared between turns stored once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# The transports a call went through: chat completions (a list of messages) or
# the completions endpoint (one prompt string, text mode).
APIS = ("chat", "completions")

# Text mode sends one growing prompt: split before each ReAct line so that
# consecutive turns share all but their last segments, which is what makes the
# prompt storable once (tracing.store.call_store). "".join(segments) is the prompt.
_SEGMENT_RE = re.compile(r"(?=\n(?:Thought|Action|Observation|Final Answer|Question)\s*(?:\d+\s*)?:)")


@dataclass
class ModelCallRecord:
    """One request to a model endpoint: exactly what went out and what came back.

    ``step_index`` is the index of the turn's first step (its thought, action,
    answer or error), so the run page finds the call from the step.
    """

    step_index: int
    api: str  # one of APIS
    # chat: the messages as sent; completions: the prompt as {"role": "prompt", "content": segment} parts.
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)  # model, temperature, max_tokens, stop, seed, tools
    response: dict[str, Any] | None = None  # the endpoint's JSON, as parsed by the client
    error: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


def prompt_segments(prompt: str) -> list[dict[str, Any]]:
    return [{"role": "prompt", "content": part} for part in _SEGMENT_RE.split(prompt) if part]


def prompt_text(messages: list[dict[str, Any]]) -> str:
    return "".join(str(m.get("content", "")) for m in messages)


# The kinds of media a message part can carry besides text.
MEDIA_KINDS = ("image", "audio", "video", "file")
# A URL kept on a media placeholder (a link is useful, a 2 MB link is an inlined file).
MEDIA_URL_CHARS = 2_000


def media_part(kind: str, *, url: str = "", mime_type: str = "", inline_chars: int = 0) -> dict[str, Any]:
    """A message part standing for an image, a sound or a file whose bytes a
    trace carried: what it was and how big, never the bytes (a screenshot a
    turn is a megabyte a turn, and nobody reads base64). ``inline_chars`` is
    the length of base64 data sent inline; a data: URL is measured the same way.
    The run page shows it as a placeholder, as it shows a native run's image."""
    kind = kind if kind in MEDIA_KINDS else "file"
    about: dict[str, Any] = {}
    if url.startswith("data:"):
        header, _, data = url[5:].partition(",")
        mime_type = mime_type or header.split(";", 1)[0]
        inline_chars = inline_chars or len(data)
    elif url:
        about["url"] = url[:MEDIA_URL_CHARS]
    if mime_type:
        about["mime_type"] = mime_type[:100]
    if inline_chars:
        about["inline_bytes"] = inline_chars * 3 // 4
    return {"type": kind, kind: about, "omitted": True}
