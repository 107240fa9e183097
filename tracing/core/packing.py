"""JSON kept deflated: model-call messages and raw responses.

A raw chat response is ~500 bytes of which most is the same keys every time
("choices", "finish_reason", "usage", ...), and messages are short JSON objects
with the same few keys. Postgres compresses nothing under ~2 kB (TOAST), so
these are deflated here, with a preset dictionary of those recurring strings:
that is what makes a 300-byte value shrink, where plain zlib barely breaks even.

The first byte names the dictionary. A stored value must always decode, so a
dictionary is never edited: a better one is added under a new version byte.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

# Later bytes are reached with shorter back-references: the commonest strings go last.
_DICTIONARIES = {
    1: (
        b'"annotations": [], "audio": null, "function_call": null, "refusal": null, '
        b'"service_tier": "default", "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0}, '
        b'"completion_tokens_details": {"accepted_prediction_tokens": 0, "audio_tokens": 0, '
        b'"reasoning_tokens": 0, "rejected_prediction_tokens": 0}, "finish_reason": "length", '
        b'{"content": "Observation: ", "role": "user"}{"content": "\\nThought: ", "role": "prompt"}'
        b'{"content": "You are a helpful assistant.", "role": "system"}'
        b'{"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\\"query\\": \\"", '
        b'"name": "search"}, "id": "call_0", "type": "function"}]}'
        b'{"content": "", "role": "tool", "tool_call_id": "call_'
        b'{"id": "chatcmpl-", "choices": [{"finish_reason": "stop", "index": 0, "logprobs": null, '
        b'"text": " I will search for \'\'.\\nAction: search[]\\nFinal Answer: ", "finish_reason": "tool_calls", '
        b'"index": 0, "logprobs": null, "message": {"content": null, "role": "assistant", "tool_calls": '
        b'[{"id": "call_1", "function": {"arguments": "{\\"query\\": \\"\\"}", "name": "search"}, '
        b'"type": "function"}]}}], "created": 1700000000, "model": "gpt-4o-mini", "object": "text_completion", '
        b'"object": "chat.completion", "system_fingerprint": "fp_", '
        b'"usage": {"completion_tokens": 20, "prompt_tokens": 300, "total_tokens": 320}}'
    ),
}
_VERSION = max(_DICTIONARIES)


def pack(text: str) -> bytes:
    """JSON text, deflated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=_DICTIONARIES[_VERSION])
    return bytes([_VERSION]) + compressor.compress(text.encode()) + compressor.flush()


def unpack(data: bytes | memoryview | None) -> Any:
    if data is None:
        return None
    data = bytes(data)
    decompressor = zlib.decompressobj(-15, zdict=_DICTIONARIES[data[0]])
    return json.loads(decompressor.decompress(data[1:]) + decompressor.flush())
