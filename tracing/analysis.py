"""A run's whole analysis over its steps: anchoring, the watchdog's signals and
whether the agent changed course after each intervention.

Pure (no Django, no I/O): the recorder's run end, the importers and
``manage.py analyse`` call it on step records and store what it writes into
each record's ``meta``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracing.anchoring import AnchorReport, anchor_report
from tracing.course import course_changes
from tracing.steps import Step
from tracing.watchdog import OFF_POLICY, Policy, Watchdog


def analyse(
    records: Sequence[Step],
    *,
    task: str,
    context: dict[str, Any] | None = None,
    policy: Policy | None = None,
    recompute_signals: bool = True,
) -> AnchorReport:
    """The anchor report, and each record's meta updated in place with its
    anchoring score, the watchdog's signals (when asked) and course changes."""
    report = anchor_report(records, task=task, context=context)
    courses = course_changes(records)
    signals: dict[int, dict[str, Any]] = {}
    if recompute_signals:
        watchdog = Watchdog(policy or OFF_POLICY, goal=task, context=context)
        for record in records:
            watchdog.observe(record)
        signals = watchdog.signals
    for record in records:
        meta = dict(record.meta or {})
        score = report.scores.get(record.index)
        if score is not None:
            meta["anchor_score"] = round(score, 3)
        if recompute_signals:
            if signals.get(record.index):
                meta["signals"] = signals[record.index]
            else:
                meta.pop("signals", None)
        if record.index in courses:
            meta["course"] = courses[record.index]
        record.meta = meta
    return report
