"""A stored model call as the run page shows it: roles, text folded past a
limit, image and audio parts as placeholders (never their bytes), tool calls.

Pure over the stored JSON; the template escapes every string it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracing.core import shown_json
from tracing.core.model_calls import prompt_text

# Past this many characters a message shows its start and says how long it is
# (the whole call is one click away as JSON): a 1 MB observation must not turn
# opening a call into a 1 MB page.
FOLD_CHARS = 20_000
# Content part types that carry media rather than text (OpenAI chat parts).
MEDIA_PARTS = {"image_url": "image", "image": "image", "input_image": "image", "input_audio": "audio",
               "audio": "audio", "audio_url": "audio", "video": "video", "file": "file", "input_file": "file"}


@dataclass
class Shown:
    """Text cut to FOLD_CHARS, with the length it had."""

    text: str
    chars: int

    @property
    def folded(self) -> bool:
        return self.chars > len(self.text)

    @classmethod
    def of(cls, text: str, limit: int = FOLD_CHARS) -> Shown:
        return cls(text[:limit], len(text))


@dataclass
class MessageView:
    role: str
    parts: list[Shown] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_call_id: str = ""
    editable: bool = True  # plain-text content, which the replay form can edit


def _media_placeholder(part: dict[str, Any]) -> str:
    kind = MEDIA_PARTS.get(str(part.get("type")), str(part.get("type") or "part"))
    payload = part.get(part.get("type")) if isinstance(part.get(part.get("type")), dict) else part
    url = str(payload.get("url") or payload.get("data") or "") if isinstance(payload, dict) else ""
    detail = ""
    if url.startswith("data:"):
        detail = f"{url[5:].split(';', 1)[0] or 'inline'}, {len(url) * 3 // 4 // 1024} KB inline"
    elif isinstance(payload, dict) and payload.get("inline_bytes"):
        # An ingested trace's media part: its size was kept, not its bytes (tracing.core.model_calls.media_part).
        detail = f"{payload.get('mime_type') or 'inline'}, {int(payload['inline_bytes']) // 1024} KB inline"
    elif url:
        detail = f"{payload['mime_type']}, by URL" if isinstance(payload, dict) and payload.get("mime_type") else "by URL"
    elif isinstance(payload, dict) and payload.get("mime_type"):
        detail = str(payload["mime_type"])
    fmt = payload.get("format") if isinstance(payload, dict) else None
    if fmt:
        detail = f"{fmt}{', ' + detail if detail else ''}"
    return f"[{kind}{': ' + detail if detail else ''} — not shown]"


def message_view(message: Any) -> MessageView:
    if not isinstance(message, dict):
        return MessageView(role="?", parts=[Shown.of(shown_json.dumps(message))],
                           editable=False)
    view = MessageView(role=str(message.get("role") or "?"), tool_call_id=str(message.get("tool_call_id") or ""))
    content = message.get("content")
    if isinstance(content, list):
        view.editable = False
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                view.parts.append(Shown.of(str(part.get("text") or "")))
            elif isinstance(part, dict):
                view.placeholders.append(_media_placeholder(part))
            else:
                view.parts.append(Shown.of(str(part)))
    elif content is not None:
        view.parts.append(Shown.of(str(content)))
    for call in message.get("tool_calls") or []:
        function = (call or {}).get("function") or {} if isinstance(call, dict) else {}
        view.tool_calls.append({"id": str(call.get("id") or "") if isinstance(call, dict) else "",
                                "name": str(function.get("name") or ""),
                                "arguments": Shown.of(str(function.get("arguments") or ""))})
    return view


def messages_view(api: str, messages: list[Any]) -> list[MessageView]:
    if api == "completions":
        # The prompt went out as one string; it is stored in segments.
        return [MessageView(role="prompt", parts=[Shown.of(prompt_text(messages))])]
    return [message_view(m) for m in messages]


@dataclass
class ReplyView:
    """What the model answered: its text and tool calls, from a raw response."""

    text: Shown | None
    tool_calls: list[dict[str, Any]]
    finish_reason: str = ""


def reply_view(response: dict[str, Any] | None) -> ReplyView:
    choices = (response or {}).get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ReplyView(None, [])
    choice = choices[0]
    if "text" in choice:
        return ReplyView(Shown.of(str(choice.get("text") or "")), [], str(choice.get("finish_reason") or ""))
    message = message_view(choice.get("message") or {})
    text = message.parts[0] if message.parts else None
    return ReplyView(text, message.tool_calls, str(choice.get("finish_reason") or ""))


def raw_json(value: Any) -> Shown:
    return Shown.of(shown_json.dumps(value, indent=2))


def tool_names(tools: Any) -> list[str]:
    """The names of the tools offered (OpenAI function schemas, or anything else named)."""
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            names.append(str(function.get("name") or "?"))
    return names
