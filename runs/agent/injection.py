"""Observations that ask for a write: a tool result is data, never an
instruction, and never an approval (DESIGN.md 1). A result that names a
writing tool, asks for a write in so many words, or claims the write is
already approved is flagged, and a write the agent asks for after it is shown
to the reviewer with that flag."""

from __future__ import annotations

import re
from collections.abc import Iterable

_REQUEST_RE = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier)\s+instructions?\b"
    r"|\b(?:pre-?approved|already\s+approved|approval\s+(?:is\s+)?(?:granted|not\s+(?:needed|required)))\b"
    r"|\b(?:you\s+must|please|now)\s+(?:immediately\s+)?(?:send|book|transfer|delete|pay|email|message)\b",
    re.IGNORECASE,
)


def write_request(text: str, writing_tools: Iterable[str]) -> str | None:
    """What in ``text`` asks for a write (the matched words), or None."""
    if not text:
        return None
    for name in writing_tools:
        # send_message, "send message", "send-message"
        pattern = r"\b" + r"[\s_-]?".join(re.escape(part) for part in name.split("_")) + r"\b"
        found = re.search(pattern, text, re.IGNORECASE)
        if found:
            return found.group(0)
    found = _REQUEST_RE.search(text)
    return found.group(0) if found else None
