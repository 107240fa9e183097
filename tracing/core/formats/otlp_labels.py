"""OTLP attributes → a run's tags, metadata and session (OpenInference conventions).

Pure (no Django). One function, called once per new trace by
tracing.store.ingest.services, so the OTLP decoder itself stays free of it:

- ``tag.tags``: a list of strings (or one string) → tags;
- ``metadata``: a JSON object as a string (or an object) → metadata;
- ``session.id`` → the run's session; ``user.id`` → metadata["user.id"].

Ingestion must not lose a trace over a label, so the limits of tracing.core.label_limits
are applied by trimming, not by refusing (``strict=False``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tracing.core import shown_json
from tracing.core.label_limits import USER_KEY, Labels, clean_labels

TAGS_ATTR = "tag.tags"
METADATA_ATTR = "metadata"
SESSION_ATTR = "session.id"
USER_ATTR = "user.id"
LABEL_ATTRS = frozenset([TAGS_ATTR, METADATA_ATTR, SESSION_ATTR, USER_ATTR])


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        parsed = shown_json.parse(value)
        return dict(parsed) if isinstance(parsed, dict) else {METADATA_ATTR: value}
    return {} if value is None else {METADATA_ATTR: value}


def span_label_sources(spans: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """Each span's own attributes, then its resource's label attributes."""
    for span in spans:
        yield span.attrs
        if span.resource_labels:
            yield span.resource_labels


def labels_merged(old: Labels, new: Labels) -> Labels:
    """A later batch's labels added to the run's: tags united, metadata keys
    already set kept, the session kept once given."""
    return clean_labels(tags=[*old.tags, *new.tags], metadata={**new.metadata, **old.metadata},
                        session_id=old.session_id or new.session_id, strict=False)


def labels_from_attributes(attribute_sets: Iterable[Mapping[str, Any]]) -> Labels:
    """The labels of a trace from its spans' (and resources') attributes, in
    order: tags are the union, metadata keys the first value seen, the session
    and the user the first given."""
    tags: list[Any] = []
    metadata: dict[str, Any] = {}
    session: Any = None
    for attrs in attribute_sets:
        raw_tags = attrs.get(TAGS_ATTR)
        if raw_tags is not None:
            tags.extend([raw_tags] if isinstance(raw_tags, str) else list(raw_tags)
                        if isinstance(raw_tags, Iterable) else [raw_tags])
        for key, value in _metadata(attrs.get(METADATA_ATTR)).items():
            metadata.setdefault(key, value)
        if attrs.get(USER_ATTR) is not None:
            metadata.setdefault(USER_KEY, str(attrs[USER_ATTR]))
        if session is None and attrs.get(SESSION_ATTR) is not None:
            session = attrs[SESSION_ATTR]
    return clean_labels(tags=tags, metadata=metadata, session_id=session, strict=False)
