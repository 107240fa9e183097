"""Tags, metadata and the session of a run: the limits and the one validation.

Pure (no Django). Every way in — the run page's form, the JSON API, OTLP
attributes, `runagent --tag` — goes through :func:`clean_labels`, so the
limits below hold wherever a label comes from. Odd characters (quotes,
``<script>``, any script) are kept as typed: they are text, escaped where shown.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A tag is a short label to filter on, not a document: 64 of 64 characters
# covers every real use we have seen (env, experiment, ticket ids) and keeps
# the run list's tag cell and the GIN index small. 1,000 tags is refused.
MAX_TAGS = 64
MAX_TAG_CHARS = 64
# Metadata is key/value context (user, version, dataset): flat, small.
MAX_METADATA_KEYS = 64
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 1_000
# The whole metadata object as JSON, so a run row stays small for the list.
MAX_METADATA_BYTES = 16_384
MAX_SESSION_CHARS = 200
# OpenInference's user.id lands in metadata under this key.
USER_KEY = "user.id"


class LabelError(ValueError):
    """A label over a limit or malformed; the message names the field."""


@dataclass
class Labels:
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str = ""


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text)


def _clean_tag(tag: Any, strict: bool) -> str | None:
    if not isinstance(tag, str):
        if strict:
            raise LabelError(f"tags: each tag must be a string, got {type(tag).__name__}")
        tag = str(tag)
    tag = tag.strip()
    if not tag:
        if strict:
            raise LabelError("tags: a tag cannot be empty")
        return None
    if _has_control(tag):
        if strict:
            raise LabelError(f"tags: {tag[:20]!r} contains control characters")
        tag = "".join(ch for ch in tag if unicodedata.category(ch) not in ("Cc", "Cs")).strip() or None
        if tag is None:
            return None
    if len(tag) > MAX_TAG_CHARS:
        if strict:
            raise LabelError(f"tags: {tag[:20]!r}… is longer than {MAX_TAG_CHARS} characters")
        tag = tag[:MAX_TAG_CHARS]
    return tag


def clean_tags(tags: Iterable[Any] | None, *, strict: bool = True) -> list[str]:
    """Unique tags in their order. strict: refuse what breaks a limit (forms,
    the API); not strict: trim to the limits (OTLP, where a span cannot be
    answered field by field and one bad attribute must not lose the trace)."""
    if tags is None:
        return []
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        if strict:
            raise LabelError("tags: expected a list of strings")
        tags = [tags]
    out: dict[str, None] = {}
    for raw in tags:
        tag = _clean_tag(raw, strict)
        if tag is not None:
            out[tag] = None
    if len(out) > MAX_TAGS:
        if strict:
            raise LabelError(f"tags: {len(out)} tags, at most {MAX_TAGS} allowed")
        return list(out)[:MAX_TAGS]
    return list(out)


def _clean_value(key: str, value: Any, strict: bool) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if not isinstance(value, str):
        # Flat on purpose (filters are key=value): an object or array is kept as its JSON text.
        value = json.dumps(value, ensure_ascii=False, default=str)
    if len(value) > MAX_METADATA_VALUE_CHARS:
        if strict:
            raise LabelError(f"metadata.{key}: longer than {MAX_METADATA_VALUE_CHARS} characters")
        value = value[:MAX_METADATA_VALUE_CHARS]
    return value.replace("\x00", "\ufffd")


def clean_metadata(metadata: Mapping[str, Any] | None, *, strict: bool = True) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        if strict:
            raise LabelError("metadata: expected an object of key/value pairs")
        return {}
    out: dict[str, Any] = {}
    for raw_key, value in metadata.items():
        key = str(raw_key).strip()
        if not key or _has_control(key) or len(key) > MAX_METADATA_KEY_CHARS:
            if strict:
                raise LabelError(f"metadata: key {key[:20]!r} must be 1-{MAX_METADATA_KEY_CHARS} printable characters")
            continue
        if len(out) >= MAX_METADATA_KEYS:
            if strict:
                raise LabelError(f"metadata: more than {MAX_METADATA_KEYS} keys")
            break
        out[key] = _clean_value(key, value, strict)
    if len(json.dumps(out, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
        if strict:
            raise LabelError(f"metadata: larger than {MAX_METADATA_BYTES} bytes as JSON")
        while out and len(json.dumps(out, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            out.popitem()
    return out


def clean_session(session_id: Any, *, strict: bool = True) -> str:
    if session_id is None:
        return ""
    text = str(session_id).strip()
    if _has_control(text) or len(text) > MAX_SESSION_CHARS:
        if strict:
            raise LabelError(f"session_id: at most {MAX_SESSION_CHARS} printable characters")
        text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs"))[:MAX_SESSION_CHARS]
    return text


def clean_labels(*, tags: Any = None, metadata: Any = None, session_id: Any = None, strict: bool = True) -> Labels:
    return Labels(tags=clean_tags(tags, strict=strict), metadata=clean_metadata(metadata, strict=strict),
                  session_id=clean_session(session_id, strict=strict))


def parse_tag_text(text: str) -> list[str]:
    """Tags typed in one box: separated by commas or new lines."""
    return [t for t in (p.strip() for p in text.replace("\n", ",").split(",")) if t]


def parse_metadata_text(text: str) -> dict[str, str]:
    """Metadata typed as `key=value` lines (a value may contain '=')."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise LabelError(f"metadata: line {n} is not key=value")
        out[key.strip()] = value.strip()
    return out


PATCH_FIELDS = frozenset({"tags", "add_tags", "remove_tags", "metadata", "session_id"})


def apply_patch(current: Labels, patch: Any) -> Labels:
    """A run's labels after a PATCH: `tags` replaces the list, `add_tags` /
    `remove_tags` edit it; `metadata` merges as a JSON merge patch (RFC 7396:
    a key set to null is removed); `session_id` replaces. The result is
    checked against the limits as a whole."""
    if not isinstance(patch, Mapping):
        raise LabelError("body: expected an object")
    unknown = set(patch) - PATCH_FIELDS
    if unknown:
        raise LabelError(f"body: unknown field(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(PATCH_FIELDS))})")
    tags = clean_tags(patch["tags"]) if "tags" in patch else list(current.tags)
    if "add_tags" in patch:
        tags += clean_tags(patch["add_tags"])
    if "remove_tags" in patch:
        gone = set(clean_tags(patch["remove_tags"]))
        tags = [t for t in tags if t not in gone]
    metadata = dict(current.metadata)
    if "metadata" in patch:
        if not isinstance(patch["metadata"], Mapping):
            raise LabelError("metadata: expected an object of key/value pairs")
        for key, value in patch["metadata"].items():
            if value is None:
                metadata.pop(str(key).strip(), None)
            else:
                metadata[key] = value
    session = patch.get("session_id", current.session_id)
    return clean_labels(tags=tags, metadata=metadata, session_id=session)
