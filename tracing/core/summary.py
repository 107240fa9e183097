"""What a run's steps add to its summary columns: the one rule, pure.

Lists and dashboards read per-run summaries, never the steps (DESIGN.md 3).
Every writer of steps (the recorder, one step at a time; ingestion, a batch at
a time; the JSONL import, a whole run) derives what it adds to the run's
summary here, so the columns cannot drift apart between writers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tracing.core.steps import Step

# Column widths of the run's summary arrays (varchar(40) / varchar(10)).
DETECTOR_CHARS = 40
TIER_CHARS = 10


def step_tokens(step: Step) -> tuple[int, int, float]:
    """(prompt tokens, completion tokens, latency) of a step, never negative."""
    return (max(0, int(step.prompt_tokens or 0)), max(0, int(step.completion_tokens or 0)),
            max(0.0, float(step.latency_ms or 0.0)))


@dataclass
class RunSummary:
    """The summary of some steps of one run, in step order."""

    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    # Interruptions (watchdog tiers, budget truncation, user stop): detectors
    # and tiers in order of first appearance, each once.
    interventions: int = 0
    detectors: list[str] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    # Context pressure: the prompt size of each model turn (a step that
    # reports prompt tokens) and the observations truncated for the context.
    context_steps: list[int] = field(default_factory=list)
    context_tokens: list[int] = field(default_factory=list)
    truncated_steps: list[int] = field(default_factory=list)

    def add(self, step: Step) -> None:
        prompt, completion, latency = step_tokens(step)
        meta = step.meta or {}
        self.steps += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.latency_ms += latency
        # A policy replayed over a run it did not watch (tracing.core.analysis) counts
        # where it would have intervened: lists and filters treat both alike.
        replayed = meta.get("replayed_intervention") if step.kind != "intervention" else None
        if step.kind == "intervention" or isinstance(replayed, dict):
            source = replayed if isinstance(replayed, dict) else meta
            self.interventions += 1
            detector = str(source.get("detector") or "watchdog")[:DETECTOR_CHARS]
            tier = str(source.get("tier") or "")[:TIER_CHARS]
            if detector not in self.detectors:
                self.detectors.append(detector)
            if tier and tier not in self.tiers:
                self.tiers.append(tier)
        if prompt > 0:
            self.context_steps.append(step.index)
            self.context_tokens.append(prompt)
        # Observations cut for the context: when recorded (too long), or when a
        # later turn's prompt had to shorten older ones to fit the model's window.
        if (step.kind == "observation" and meta.get("truncated")) or meta.get("context_cut"):
            self.truncated_steps.append(step.index)

    @classmethod
    def of(cls, steps: Iterable[Step]) -> RunSummary:
        summary = cls()
        for step in steps:
            summary.add(step)
        return summary

    def delta(self) -> tuple:
        """The values the run sink adds to a run's summary, in its order (runs/core/run_rows.py)."""
        return (self.steps, self.prompt_tokens, self.completion_tokens, self.latency_ms, self.interventions,
                self.detectors, self.tiers, self.context_steps, self.context_tokens, self.truncated_steps)
