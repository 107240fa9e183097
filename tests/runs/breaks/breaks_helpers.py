"""Runs whose stored steps make the detector show a real break: a re-query at
step 4 (strong, "answered before"), and, with ``then_fails``, a success
claimed after an error at step 8 (the next strong break once re-query is
demoted)."""

from __future__ import annotations

from runs.launch.run_analysis import runs_analyse
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

GOAL = "What is the population of Freedonia? Then book a ticket to Fredville."
FACT = "Freedonia has a population of 4,200,000 people."


def _steps(then_fails: bool) -> list[StepRecord]:
    steps = [
        StepRecord(index=0, kind="thought", text="I need the population of Freedonia."),
        StepRecord(index=1, kind="action", text="search", tool="search", args={"query": "population of Freedonia"}),
        StepRecord(index=2, kind="observation", text=FACT, tool="search", meta={"status": "ok"}),
        StepRecord(index=3, kind="thought", text="Let me look it up again."),
        StepRecord(index=4, kind="action", text="search", tool="search", args={"query": "population of Freedonia"}),
        StepRecord(index=5, kind="observation", text=FACT, tool="search", meta={"status": "ok"}),
    ]
    if then_fails:
        steps += [
            StepRecord(index=6, kind="action", text="book", tool="book_ticket", args={"city": "Fredville"}),
            StepRecord(index=7, kind="observation", text="Error: booking service unavailable", tool="book_ticket",
                       meta={"status": "error"}),
            StepRecord(index=8, kind="final", text="I booked your ticket to Fredville successfully."),
        ]
    else:
        steps.append(StepRecord(index=6, kind="final", text="4,200,000"))
    return steps


def requery_run(make_run, *, then_fails: bool = False, **fields):
    """A finished run showing a re-query break at step 4, analysed as a run that ended is."""
    run = make_run(prompt=GOAL, **fields)
    for step in _steps(then_fails):
        record_step(run.pk, step)
    runs_analyse([run.pk])
    run.refresh_from_db()
    return run

