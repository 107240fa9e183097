"""What tracing asks of the app that owns runs: make a run, change it, end it,
add steps to its summary.

tracing never imports runs (DESIGN.md 3), yet it records into runs' rows:
ingestion makes a run per trace or API request and ends it, the recorder adds
each step to the run's summary columns. Those rows and their columns are the
owner's, so the code that names them lives with the model (runs/core/run_rows.py)
behind this protocol, handed over when runs is ready (runs.apps) the way the
guard is handed its policy. A renamed Run field then breaks that module and its
test (tests/runs/test_run_sink.py), not a request.

What tracing still reads of a run it reads as attributes of `RunSink.model`'s
rows; those names are `READ_FIELDS`, and the test checks the model has each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from django.db import models

from tracing.core.label_limits import Labels
from tracing.core.summary import RunSummary

# The statuses tracing ends a run with; the owner may know more.
RUNNING, FINISHED, ERROR, STOPPED = "running", "finished", "error", "stopped"

# The run's attributes tracing reads (and filters on): the owner's model must have them all.
READ_FIELDS = ("status", "success", "reason", "source", "stopped_by", "final_answer", "model_name", "prompt",
               "settings", "context", "tags", "metadata", "session_id", "project", "owner", "parent", "created_at",
               "step_count", "prompt_tokens", "completion_tokens", "latency_ms", "intervention_count")


@dataclass(frozen=True)
class RunEnd:
    """How a run ended: its status, answer, whether it was right (None: not known), why, when."""

    status: str
    final_answer: str
    finished_at: datetime
    success: bool | None = None
    reason: str = ""
    stopped_by: str = ""


@dataclass
class NewRun:
    """A run that came from outside (the JSON API, an OTLP trace): provider `import`, its source `api` or `otlp`."""

    owner: Any
    project_id: int
    source: str
    prompt: str
    model_name: str
    started_at: datetime
    settings: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)
    labels: Labels = field(default_factory=Labels)
    summary: RunSummary = field(default_factory=RunSummary)
    end: RunEnd | None = None


@dataclass
class RunChange:
    """What a later batch learnt about a run; None leaves a field as it is."""

    model_name: str | None = None
    prompt: str | None = None
    settings: dict | None = None
    context: dict | None = None
    labels: Labels | None = None


class RunSink(Protocol):
    # The run rows: tracing locks them, reads READ_FIELDS, deletes them (their steps cascade).
    model: type[models.Model]
    # A run in one of these is still being written.
    live_statuses: tuple[str, ...]

    def new_run(self, new: NewRun) -> models.Model:
        """An unsaved run; the caller writes it (tracing.store.ingest.writes.copy_objects)."""

    def change(self, run: models.Model, change: RunChange) -> None:
        """Write what changed, on the row and on `run`."""

    def end(self, run: models.Model, end: RunEnd) -> None:
        """End `run`, on the row and on the instance."""

    def end_live(self, ends: Sequence[tuple[int, RunEnd]], *, live_only: bool = True) -> None:
        """End these runs (by id) where they are still live, in one statement;
        not ``live_only``: also ended runs whose steps were derived again."""

    def summary_sql(self, tail: str) -> str:
        """One UPDATE adding a step to its run's summary, `tail` (FROM ... WHERE ...)
        at its end: the recorder runs it in the statement that inserts the step
        (its named parameters: tracing.store.recorder.record_step)."""

    def add_to_summaries(self, deltas: Sequence[tuple[int, RunSummary]]) -> None:
        """Add each batch's summary to its run's columns, all runs in one statement."""

    def reset_summary(self, run_id: int) -> None:
        """Zero a run's summary (its steps are about to be written again)."""


_sink: list[RunSink] = []


def run_sink_use(sink: RunSink) -> None:
    """Called once by the app that owns runs, when it is ready."""
    _sink[:] = [sink]


def run_sink() -> RunSink:
    if not _sink:
        raise RuntimeError("no RunSink: the app that owns runs hands one over in its AppConfig.ready (run_sink_use)")
    return _sink[0]
