"""The watchdog as a service: the step API answers an agent that runs elsewhere.

A run created with ``"guard": true`` (or ``"observe"``) is watched as the
built-in loop watches its own: every step it sends goes through the same
``Watchdog.observe``, under the policy its project gives new runs, and the
request answers with the decision (``none``, or the hint, redirect or stop
with the text and evidence the loop would inject). Between requests the
watchdog lives as ``Watchdog.snapshot()`` in GuardState (bounded JSON) and
its run memory in GuardMemo rows looked up by the batch's features, so a batch
costs the same at step 10 and at step 10,000.

A decision is recorded as an intervention of the run the way a replayed
policy's is for imported runs (``meta["replayed_intervention"]`` on the step
it reacted to, tracing.core.analysis), so bands, review items and false-kill
figures count it; ``sent_to_agent`` says it went to the agent (``shadow`` in
observe mode, where nothing is acted on). A stop ends the run ``stopped`` by
the watchdog when the agent next writes (steps or its finish) or after
GUARD_STOP_TIMEOUT_S of silence (guard_stops_expire, swept with the stale
traces). Every function here runs inside the caller's transaction, with the
run row locked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from tracing.core.analysis import REPLAYED_KEY
from tracing.core.detectors.observation import ANALYSIS_CHARS
from tracing.core.normalize import content_tokens, features, stable_digest
from tracing.core.steps import Step as StepRecord
from tracing.core.watchdog import DEFAULT_POLICY, Policy, RunMemory, Watchdog
from tracing.store.models import GuardMemo, GuardState
from tracing.store.run_sink import STOPPED, RunEnd, run_sink

NOT_GUARDED = 'the run is not guarded: create it with "guard": true (or "observe")'

# The policy a new run of a project gets. tracing never imports the app that
# stores policies (DESIGN.md 3): runs hands its selector in (RunsConfig.ready).
def _builtin_policy(project_id: int | None) -> Policy:
    return DEFAULT_POLICY


_project_policy: Callable[[int | None], Policy] = _builtin_policy


def guard_policy_use(selector: Callable[[int | None], Policy]) -> None:
    global _project_policy
    _project_policy = selector


class PgMemory(RunMemory):
    """RunMemory in GuardMemo rows: features and result sources by digest,
    read for the features a batch brings (one indexed lookup per observation)
    and written once at the end of the batch."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.seen_digests: set[int] = set()
        self.new_rows: list[tuple[int, int, int | None]] = []
        # Digests prefetch() asked for and did not find (features, result sources): new.
        self._absent: tuple[set[int], set[int]] = (set(), set())

    def add_features(self, feats: set[str]) -> int:
        digests = {stable_digest(f) for f in feats}
        unknown = [d for d in digests if d not in self.seen_digests]
        if unknown:
            self.seen_digests.update(self._stored(GuardMemo.Kind.FEATURE, unknown))
        new = [d for d in unknown if d not in self.seen_digests]
        self.seen_digests.update(new)
        self.new_rows.extend((GuardMemo.Kind.FEATURE, d, None) for d in new)
        return len(new)

    def first_source(self, value: int, call: int) -> int:
        if value not in self.sources:
            stored = self._stored(GuardMemo.Kind.SOURCE, [value])
            if stored:
                self.sources[value] = stored[value]
            else:
                self.sources[value] = call
                self.new_rows.append((GuardMemo.Kind.SOURCE, value, call))
        return self.sources[value]

    def prefetch(self, steps: Sequence[StepRecord]) -> None:
        """What the batch's observations will ask, in one query: their features
        and their text as a result (the same tokens and digests the detectors
        compute; anything missed here is looked up when asked)."""
        feats: set[int] = set()
        values: set[int] = set()
        for step in steps:
            if step.kind != "observation":
                continue
            text = step.text if isinstance(step.text, str) else str(step.text or "")
            feats.update(stable_digest(f) for f in features(content_tokens(text, ANALYSIS_CHARS)))
            values.add(stable_digest(text[:ANALYSIS_CHARS].strip()))
        if not feats and not values:
            return
        with connection.cursor() as cur:
            cur.execute("SELECT kind, digest, source FROM tracing_guardmemo WHERE run_id = %s AND "
                        "((kind = 0 AND digest = ANY(%s)) OR (kind = 1 AND digest = ANY(%s)))",
                        [self.run_id, list(feats), list(values)])
            rows = cur.fetchall()
        self.seen_digests.update(d for kind, d, _ in rows if kind == GuardMemo.Kind.FEATURE)
        self.sources.update((d, s) for kind, d, s in rows if kind == GuardMemo.Kind.SOURCE)
        # Asked and absent: new, no second look.
        self._absent = (feats - self.seen_digests, values - self.sources.keys())

    def _stored(self, kind: int, digests: list[int]) -> dict[int, int | None]:
        absent = self._absent[kind]
        digests = [d for d in digests if d not in absent]
        if not digests:
            return {}
        with connection.cursor() as cur:
            cur.execute("SELECT digest, source FROM tracing_guardmemo WHERE run_id = %s AND kind = %s "
                        "AND digest = ANY(%s)", [self.run_id, kind, digests])
            return dict(cur.fetchall())

    def save(self, guard: GuardState) -> None:
        """The new memo rows and the guard's state, in one statement."""
        kinds, digests, sources = zip(*self.new_rows, strict=True) if self.new_rows else ((), (), ())
        with connection.cursor() as cur:
            cur.execute(
                "WITH memo AS (INSERT INTO tracing_guardmemo (run_id, kind, digest, source) "
                "SELECT %s, k, d, s FROM unnest(%s::smallint[], %s::bigint[], %s::bigint[]) AS v(k, d, s) "
                "ON CONFLICT (run_id, kind, digest) DO NOTHING) "
                "UPDATE tracing_guardstate SET state = %s::jsonb, last_index = %s, stop = %s::jsonb, "
                "stop_sent_at = %s WHERE run_id = %s",
                [self.run_id, list(kinds), list(digests), list(sources), json.dumps(guard.state), guard.last_index,
                 json.dumps(guard.stop) if guard.stop is not None else None, guard.stop_sent_at, self.run_id])
        self.new_rows = []


@dataclass
class GuardAnswer:
    """What the step API answers beside what it wrote."""

    mode: str = ""  # act | observe | "" (not guarded)
    # {"tier", "detector", "text", "evidence", "step"} of the batch's last decision.
    decision: dict[str, Any] | None = None
    reason: str = ""  # why there is no decision, when that is not "nothing to say"
    ended: bool = False  # this request ended the run (a stop acknowledged)
    decisions: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"guard": self.mode or "off", "decision": self.decision or "none"}
        if self.decision is None and self.reason:
            out["decision_reason"] = self.reason
        if len(self.decisions) > 1:
            out["decisions"] = self.decisions
        return out


def guard_start(*, run: Any, mode: str) -> GuardState:
    """Guard a new run under its project's policy (fixed for the run's life)."""
    return GuardState.objects.create(run=run, mode=mode, policy=_project_policy(run.project_id).to_dict())


def _watchdog(run: Any, guard: GuardState, memory: PgMemory) -> Watchdog:
    policy = Policy.from_dict(guard.policy)
    goal, context = run.goal, run.context or None
    if guard.state:
        return Watchdog.restore(guard.state, policy, goal=goal, context=context, memory=memory)
    return Watchdog(policy, goal=goal, context=context, memory=memory)


def _decision(index: int, iv: Any) -> dict[str, Any]:
    return {"tier": iv.tier, "detector": iv.detector, "text": iv.message, "evidence": iv.evidence, "step": index}


def guard_observe(*, run: Any, guard: GuardState, steps: Sequence[StepRecord], now: datetime) -> GuardAnswer:
    """The watchdog over a batch the caller is about to write: each step's
    meta gets its signals and, where the policy intervened, the intervention;
    the state is saved. Steps at or below the last index seen are not judged
    again (a resend). After a stop the watchdog says nothing more."""
    answer = GuardAnswer(mode=guard.mode)
    fresh = [s for s in steps if s.index > guard.last_index]
    if not fresh:
        return answer
    memory = PgMemory(run.pk)
    memory.prefetch(fresh)
    wd = _watchdog(run, guard, memory)
    sent = guard.mode == GuardState.Mode.ACT
    for step in fresh:
        iv = wd.observe(step)
        meta = dict(step.meta or {})
        if wd.signals.get(step.index):
            meta["signals"] = wd.signals[step.index]
        if iv is not None:
            policy = wd.policy
            meta[REPLAYED_KEY] = {"detector": iv.detector, "tier": iv.tier, "message": iv.message,
                                  "policy": policy.name, "policy_version": policy.version, "evidence": iv.evidence,
                                  "sent_to_agent": sent, "shadow": not sent}
            answer.decisions.append(_decision(step.index, iv))
            if iv.tier == "stop" and sent:
                guard.stop = {"step": step.index, "detector": iv.detector, "text": iv.message}
                guard.stop_sent_at = now
        step.meta = meta
    guard.state = wd.snapshot()
    guard.last_index = fresh[-1].index
    memory.save(guard)
    answer.decision = answer.decisions[-1] if answer.decisions else None
    if not answer.decisions and wd.stopped:
        answer.reason = "the watchdog stopped this run earlier" + ("" if sent else " (shadow mode)")
    if len(answer.decisions) == 1:
        answer.decisions = []
    return answer


def stop_reason(stop: dict[str, Any]) -> str:
    return f"stopped by the watchdog ({stop['detector']}) at step {stop['step']}"


def guard_stop_end(*, run: Any, guard: GuardState, now: datetime, final_answer: str = "", why: str = "") -> None:
    """End a run sent a stop: `stopped` by the watchdog, the stop's text kept as its reason."""
    run_sink().end(run, RunEnd(status=STOPPED, stopped_by="watchdog", success=None, finished_at=now,
                               reason=f"{stop_reason(guard.stop)}{why}: {guard.stop['text']}",
                               final_answer=final_answer or run.final_answer or ""))


def guard_of(run: Any) -> GuardState | None:
    """The run's guard (read with the run when it was selected with select_related("guard"))."""
    try:
        return run.guard
    except GuardState.DoesNotExist:
        return None


def guard_stops_expire(*, older_than_s: float | None = None) -> list[int]:
    """End the guarded runs sent a stop that said nothing since, after
    GUARD_STOP_TIMEOUT_S. Returns the runs ended (to be announced as ended)."""
    timeout = settings.GUARD_STOP_TIMEOUT_S if older_than_s is None else older_than_s
    cutoff = timezone.now() - timedelta(seconds=timeout)
    sink = run_sink()
    live = list(sink.live_statuses)
    candidates = list(GuardState.objects.filter(stop_sent_at__lt=cutoff, run__status__in=live)
                      .values_list("run_id", flat=True))
    ended = []
    for run_id in candidates:
        with transaction.atomic():
            run = sink.model.objects.select_for_update().filter(pk=run_id, status__in=live).first()
            guard = guard_of(run) if run is not None else None
            if guard is None or guard.stop_sent_at is None or guard.stop_sent_at >= cutoff:
                continue  # ended or written meanwhile
            guard_stop_end(run=run, guard=guard, now=timezone.now(),
                           why=f", the agent silent for {timeout:g} s after it (GUARD_STOP_TIMEOUT_S)")
            ended.append(run_id)
    return ended
