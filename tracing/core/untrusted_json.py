"""JSON from text nobody vouches for (API bodies, uploaded lines, form fields), as Postgres will store it. Pure.

`loads` refuses what would fail later, far from the input and often half-way
through a write: nesting past the interpreter's recursion limit, integers too
long for Python to convert, NaN / Infinity and floats past a double's range
(jsonb refuses them), lone UTF-16 surrogates (not valid UTF-8: Postgres refuses
them). NUL, which Postgres refuses in text and jsonb alike but tools really do
print, is kept as U+FFFD instead of being refused.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Nesting deeper than this is refused: real documents are a few levels deep,
# and every consumer (json.dumps, detectors, templates) walks them recursively.
MAX_DEPTH = 100
# Python's own limit for int(str) (sys.int_info.default_max_str_digits): json
# refuses longer integers itself, faster than a hook called for every number.
MAX_INT_DIGITS = 4300
_INT_DIGITS = re.compile(r"value has (\d+) digits")
NUL = "\x00"
NUL_STANDIN = "\ufffd"

# A \uD800-\uDFFF escape: json.loads turns a lone one into a code point that
# cannot be encoded as UTF-8. Valid pairs match too, and are checked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class UntrustedJsonError(ValueError):
    """Text that is not JSON we can store; the message names where and why."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]}… is too large" if len(text) > 20 else
                         f"the number {text} is too large")
    return value


def _digits_message(exc: ValueError) -> str:
    # Python's own refusal names sys.set_int_max_str_digits, which means nothing to a client.
    found = _INT_DIGITS.search(str(exc))
    if found is None:
        return str(exc)
    return f"an integer of {int(found.group(1)):,} digits (at most {MAX_INT_DIGITS:,})"


def loads(text: str | bytes, *, where: str = "the text", root: str = "$", max_depth: int = MAX_DEPTH) -> Any:
    """Parse `text` (bytes must be UTF-8); raise UntrustedJsonError naming
    `where` (the whole text) or the path from `root` to the bad value."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UntrustedJsonError(
                f"{where} is not valid UTF-8 (byte 0x{text[exc.start]:02x} at offset {exc.start})") from exc
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise UntrustedJsonError(f"{where} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError as exc:
        raise UntrustedJsonError(f"{where} is not acceptable JSON: it is nested too deeply") from exc
    except ValueError as exc:  # the constants and floats refused above; integers past MAX_INT_DIGITS
        raise UntrustedJsonError(f"{where} is not acceptable JSON: {_digits_message(exc)}") from exc
    surrogates = bool(_SURROGATE_ESCAPE.search(text))
    if surrogates or _too_deep(data, max_depth):
        # The slow walk, with paths for the message; most texts never need it.
        _check(data, where, root, max_depth, surrogates=surrogates)
    return _without_nul(data) if "\\u0000" in text else data


def _too_deep(value: Any, max_depth: int) -> bool:
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        for child in (item.values() if isinstance(item, dict) else item):
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _check(value: Any, where: str, root: str, max_depth: int, *, surrogates: bool) -> None:
    stack = [(value, root, 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if surrogates:
                _encodable(item, path)
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth > max_depth:
            raise UntrustedJsonError(f"{where} is not acceptable JSON: it is nested too deeply "
                                     f"(more than {max_depth} levels, at {path[:200]})")
        if isinstance(item, dict):
            for key, val in item.items():
                if surrogates:
                    _encodable(key, f"{path} (a key)")
                # A key is shown escaped: a control character in it would break the message's line.
                stack.append((val, f"{path}.{_shown(key)}", depth + 1))
        else:
            stack.extend((val, f"{path}[{i}]", depth + 1) for i, val in enumerate(item))


def _shown(key: str) -> str:
    return key if key.isprintable() else repr(key)[1:-1]


def _encodable(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UntrustedJsonError(f"{path[:200]} contains a lone UTF-16 surrogate escape, which is not valid "
                                 "Unicode") from exc


def clean_text(text: str) -> str:
    """`text` with NUL kept as U+FFFD: Postgres refuses NUL in text and jsonb."""
    return text.replace(NUL, NUL_STANDIN) if NUL in text else text


def _without_nul(value: Any) -> Any:
    # Recursion is bounded: _check has refused anything deeper than max_depth.
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value
