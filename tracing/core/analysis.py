"""A run's whole analysis over its steps: anchoring, the watchdog's signals and
whether the agent changed course after each intervention.

Pure (no Django, no I/O): the recorder's run end, the importers and
``manage.py analyse`` call it on step records and store what it writes into
each record's ``meta``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracing.core.anchoring import AnchorReport, anchor_report
from tracing.core.course import course_changes
from tracing.core.replay import replay
from tracing.core.steps import Step
from tracing.core.watchdog import OFF_POLICY, Policy, Watchdog

# Where a replayed policy would have intervened in a run it did not watch (an
# ingested or imported run): on the step it reacted to, as {"detector", "tier",
# "message", "policy", "policy_version", "evidence"}. The run summary counts it
# as an intervention (tracing.core.summary), so lists filter on it like on live ones.
REPLAYED_KEY = "replayed_intervention"
# Marks the step API's guard (tracing.store.guard) puts on the interventions it
# answered with: kept when the whole-run replay finds the same one again.
SENT_KEYS = ("sent_to_agent", "shadow")


def analyse(
    records: Sequence[Step],
    *,
    task: str,
    context: dict[str, Any] | None = None,
    policy: Policy | None = None,
    recompute_signals: bool = True,
    replay_policy: Policy | None = None,
    demoted: frozenset[str] = frozenset(),
) -> AnchorReport:
    """The anchor report, and each record's meta updated in place with its
    anchoring score, the watchdog's signals (when asked), course changes and,
    with ``replay_policy``, where that policy would have intervened.
    ``demoted``: the patterns the run's project demoted (weak there, never its break)."""
    report = anchor_report(records, task=task, context=context, demoted=demoted)
    courses = course_changes(records)
    signals: dict[int, dict[str, Any]] = {}
    if recompute_signals:
        watchdog = Watchdog(policy or OFF_POLICY, goal=task, context=context)
        for record in records:
            watchdog.observe(record)
        signals = watchdog.signals
    replayed: dict[int, dict[str, Any]] = {}
    if replay_policy is not None and replay_policy.enabled:
        # A replay of its own: the signals above cover every step, while a
        # replayed stop ends what the policy would have seen.
        done = replay(records, goal=task, policy=replay_policy, context=context)
        for index, iv in done.watchdog.interventions:
            replayed[index] = {"detector": iv.detector, "tier": iv.tier, "message": iv.message,
                               "policy": replay_policy.name, "policy_version": replay_policy.version,
                               "evidence": iv.evidence}
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
        if replay_policy is not None:
            if record.index in replayed:
                new, old = replayed[record.index], meta.get(REPLAYED_KEY)
                if isinstance(old, dict) and (old.get("tier"), old.get("detector")) == (new["tier"], new["detector"]):
                    new = {**new, **{k: old[k] for k in SENT_KEYS if k in old}}
                meta[REPLAYED_KEY] = new
            else:
                meta.pop(REPLAYED_KEY, None)
        record.meta = meta
    return report
