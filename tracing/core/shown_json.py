"""JSON as pages show it: parse and print within bounds, the rest as text. Pure.

One rule for what renders (issue 28): whatever an entry point accepted, the
run page, its partials, the compare grid, exports and the call panel render.
Entry points keep strings as strings, and a string may hold JSON nested 5,000
deep: json.loads of it raises RecursionError (not a ValueError), and a value
a few hundred levels deep breaks json.dumps with an indent, repr and every
recursive walk. So whoever turns stored text into structure for a page (or
an analysis of what a page shows) parses through `parse`, and whoever prints
stored structure prints through `dumps`: past MAX_SHOWN_DEPTH or
MAX_SHOWN_CHARS, a string stays the text it is, and a deeper branch is shown
as a marker.
"""

from __future__ import annotations

import json
from typing import Any

from tracing.core.untrusted_json import MAX_DEPTH

# Deeper than the deepest JSON any entry point stores as structure
# (untrusted_json.MAX_DEPTH) is shown as text: real payloads are a few levels
# deep, and at this depth json.dumps and the templates' walks stay far from the
# interpreter's recursion limit (1,000 frames).
MAX_SHOWN_DEPTH = MAX_DEPTH
# Text longer than this is not parsed for display (runs.payloads.MAX_RENDER_CHARS is the same size).
MAX_SHOWN_CHARS = 200_000
DEEPER = "… (nested deeper than {} levels: not shown)"


def depth_of(value: Any, limit: int = MAX_SHOWN_DEPTH) -> int:
    """The nesting depth of `value` (1 for a flat list or dict), counted up to limit + 1, without recursion."""
    if not isinstance(value, (dict, list, tuple)):
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        for child in (item.values() if isinstance(item, dict) else item):
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))
    return deepest


def parse(text: str, *, default: Any = None, max_depth: int = MAX_SHOWN_DEPTH,
          max_chars: int = MAX_SHOWN_CHARS) -> Any:
    """The JSON value `text` holds, or `default` when it is not JSON or is past the bounds (show it as text)."""
    if len(text) > max_chars:
        return default
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        # ValueError: not JSON, or an integer past Python's 4,300 digits.
        return default
    return default if depth_of(value, max_depth) > max_depth else value


def clipped(value: Any, max_depth: int = MAX_SHOWN_DEPTH) -> Any:
    """`value` with every branch deeper than `max_depth` replaced by a marker string."""
    if depth_of(value, max_depth) <= max_depth:
        return value
    return _clip(value, max_depth)


def _clip(value: Any, room: int) -> Any:
    # Recursion bounded by `room` (at most MAX_SHOWN_DEPTH frames).
    if not isinstance(value, (dict, list, tuple)):
        return value
    if room <= 0:
        return DEEPER.format(MAX_SHOWN_DEPTH)
    if isinstance(value, dict):
        return {k: _clip(v, room - 1) for k, v in value.items()}
    return [_clip(v, room - 1) for v in value]


def dumps(value: Any, **kwargs: Any) -> str:
    """json.dumps of `value` clipped to MAX_SHOWN_DEPTH (non-JSON objects as str)."""
    kwargs.setdefault("ensure_ascii", False)
    kwargs.setdefault("default", str)
    return json.dumps(clipped(value), **kwargs)
