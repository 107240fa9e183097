"""Labelling a failed run's layer."""

from __future__ import annotations

from runs.core.models import Run
from runs.failures.models import LayerLabel
from tracing.core.attribution import LAYER_KEYS

NOTE_CHARS = 4000


class LayerLabelError(ValueError):
    """A label that cannot be stored; the message says why, for the reviewer."""


def is_failed(run: Run) -> bool:
    return run.status == Run.Status.FINISHED and run.success is False


def label_layer(*, run: Run, reviewer, layer: str, note: str = "") -> LayerLabel:
    """Store the reviewer's layer for a failed run (replacing any earlier label)."""
    if layer not in LAYER_KEYS:
        raise LayerLabelError(f"unknown layer {layer[:40]!r}: one of {', '.join(LAYER_KEYS)}")
    if not is_failed(run):
        raise LayerLabelError("only a finished run with a wrong answer has a failure layer")
    if "\x00" in note:
        raise LayerLabelError("the note holds a NUL character")
    if len(note) > NOTE_CHARS:
        raise LayerLabelError(f"the note is longer than {NOTE_CHARS} characters")
    label, _ = LayerLabel.objects.update_or_create(
        run=run, defaults={"layer": layer, "guessed": (run.attribution or {}).get("layer", ""),
                           "reviewer": reviewer, "note": note.strip()})
    return label
