"""The runtime watchdog: detectors + a policy + the escalation ladder.

``Watchdog.observe(step)`` is called once per recorded step, in order (the
loop's own intervention steps included), costs O(W) and returns the
intervention to inject, if any. Tier 1 *hint* and tier 2 *redirect* are
observations the loop feeds back to the model; tier 3 *stop* ends the run with
a fallback reason. The same class replays a policy over stored runs
(``python -m tracing.detect``).

Design choices (DESIGN.md section 1):
- repetition is an entry signal: it only triggers when the repeated call also
  brought nothing new;
- stop needs the whole ladder first (a hint, then a redirect) *and* grounds
  (futile repeats, unusable results in a row, a long run without progress):
  false kills are the real cost. One shortcut: a dead loop (the same call, the
  same unusable or unchanged result, nothing effective between) that the model makes again
  after a hint about it is stopped at that call (FAST_FUTILE);
- an intervention the model ignores (its next call goes on with the loop the
  intervention was about) moves the ladder up at once, without the cooldown
  wait; interventions ignored in a row are grounds to stop (IGNORED_WITHIN,
  IGNORED_STOP);
- a soft complexity estimate of the goal stretches or shrinks the patience
  windows; it never triggers anything by itself.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from tracing.core.detectors.drift import (
    DRIFT_CHECK_EVERY,
    DRIFT_MIN_GAIN,
    DRIFT_PATIENCE,
    Checkpoint,
    DriftDetector,
    DriftSignal,
)
from tracing.core.detectors.observation import (
    ANALYSIS_CHARS,
    JUNK_BOILERPLATE_RATIO,
    JUNK_MARKUP_RATIO,
    MIN_CONTENT_TOKENS,
    NEUTRAL_CLASSES,
    NOVELTY_MIN,
    OFF_TOPIC_MIN_ARG_TOKENS,
    OFF_TOPIC_MIN_OVERLAP,
    ObservationDetector,
    ObservationSignal,
    SeenFeatures,
)
from tracing.core.detectors.repetition import (
    REPETITION_SIMILARITY,
    REPETITION_WINDOW,
    RepetitionDetector,
    RepetitionSignal,
    args_of,
    args_preview,
)
from tracing.core.detectors.stagnation import STAGNATION_K, StagnationDetector
from tracing.core.normalize import call_signature, normalize_args, stable_digest
from tracing.core.steps import TIERS, Intervention, Step

# Consecutive invalid observations (error / empty / timeout / junk / too short)
# that trigger the observation detector. 2: one failed call is routine.
INVALID_RUN = 2

# Earlier similar calls in the window needed before a repetition whose result
# was merely "nothing new" triggers. 2 (= the third call): one return to a known
# place or page is navigation (gold ALFWorld runs walk back to a table to put
# things on it); a third identical call is a loop. A repeated call whose result
# is empty / failed triggers at the first repeat.
REPETITION_MIN_REPEATS = 2

# Observations between two interventions: the model needs a turn to react
# before it is judged again.
COOLDOWN = 2

# Grounds to stop, on top of a hint and a redirect already given (any one):
# Non-progress observations in a row. 10 keeps the react_exemplars control set
# (gold runs) untouched; see bench/README-detectors.md.
STOP_STREAK = 10

# Futile repeats since the last progress: a call made again with the same
# arguments that got the same unusable result, with nothing effective (a new
# result, a user's turn) in between. In a deterministic world the third try
# of a call that failed twice the same way cannot do better; a legitimate
# re-check (run_speed_test() after the user toggled something) has something
# effective in between and never counts. Nor does the repeat of a *confirmed*
# value: a valid result that a different call had already returned (`wc -l`
# printing the same "0" for three formulations of the query) is an answer the
# agent keeps checking, not a dead end; its repeats still count as no progress
# for STOP_STREAK.
STOP_FUTILE = 2

# Unusable results in a row (error, empty, timeout, junk). 5: successful runs
# of every source in shared/eval stay under it (bench/README-detectors.md);
# fewer stops legitimate retries of a flaky tool.
STOP_INVALID = 5

# Fast lane for a dead loop, no redirect or cooldown needed: once a call has
# got the same dead result again (this many futile repeats of that very call,
# nothing effective in between) and a hint was given after that, making the
# same call once more is stopped at the call, before it runs. In a
# deterministic tool the third try of a call that failed twice the same way
# cannot do better, and the hint was the model's turn to change course. 1 is
# that third try; 0 turns the lane off.
FAST_FUTILE = 1
# Dead results (FAST_LANE_CLASSES): unusable ones (error, empty, junk, too
# short) and the same data again with nothing new in it ("no_new_info": tau2's
# get_details_by_id answered with the same record 96 times; asking again
# cannot change it). A repeated value another call returned first is a
# confirmed value and never counts (STOP_FUTILE's comment). A timeout may pass
# on a retry: it never counts. A tool polled for a status that has not changed
# yet looks the same; an agent loop should wait between polls.
FAST_LANE_CLASSES = frozenset({"error", "empty", "junk", "too_short", "no_new_info"})

# The same call (tool and arguments) made this many times anywhere in the run,
# with a hint given since its first time, is stopped at the call. An agent
# that asks a deterministic tool what it already asked has lost track of what
# it read: the answer cannot change (Search[x] again after it failed, the same
# program run again). Counted over the whole run, not since the last
# progress: agents that loop come back to a call after a detour that looked
# like progress (measured: counting since progress saves fewer failed-run
# steps at the same false kills on 5 of 8 sources). A tool polled for a state that does change (a status, a speed
# test after the user toggled something) looks the same, so it is off (0) by
# default; a team whose tools are deterministic turns it on in its policy.
STOP_REPEAT = 0
# The same call made this many times in a row (no other call between) is
# stopped at the call: the tighter form of STOP_REPEAT. Right after an answer,
# asking again cannot change it; a poll usually waits or acts between polls.
# Off (0) by default, for the same reason as STOP_REPEAT.
STOP_IN_A_ROW = 0
# Distinct calls whose counts the watchdog keeps (bounded memory, snapshots).
REPEAT_KEYS_MAX = 128

# Progress observations in a row after which the ladder starts again at hint.
RESET_AFTER = 2

# An intervention the model ignores moves the ladder up at once. After a hint
# or a redirect, each of the model's next IGNORED_WITHIN calls is judged: one
# that goes on with the loop the intervention was about (a call made in that
# loop's latest turns without progress, made again and again without progress;
# a confirmed value, STOP_FUTILE's comment, does not count) escalates to the
# next tier with no cooldown wait; a call that changes course keeps the level.
# 1: the first move after being told is the answer to it; a later return to
# the loop is a new episode the ladder judges on its usual grounds. 0 turns it
# off (the cooldown alone decides).
IGNORED_WITHIN = 1
# Interventions ignored in a row that are grounds to stop on their own (at the
# stop tier, an ignored redirect without this many is repeated, not stopped;
# inside the cooldown no other ground counts). 3 = a hint, a redirect and the
# redirect again: told three times about one loop. 2 also stops an InterCode
# success whose query returned `[]` three times, `[]` being its answer
# (bench/README-detectors.md, stop 32). 0 = never.
IGNORED_STOP = 3

# At the last tier, without grounds to stop, the redirect is repeated at most
# every REPEAT_FACTOR * cooldown observations rather than after every trigger.
REPEAT_FACTOR = 3

# Bounds of the soft complexity factor that scales the patience windows. A
# simple lookup is judged a little faster, a multi-hop comparison is given up
# to 1.5x the room; never more, so a "complex" goal cannot disable the brake.
COMPLEXITY_MIN = 0.75
COMPLEXITY_MAX = 1.5

# Markers of multi-hop / multi-part goals (English and Chinese).
_MULTI_HOP_RE = re.compile(
    r"\b(?:and|both|compare|which of|between|before|after|same|also|then|each|older|younger"
    r"|more|less|first|last|while)\b|和|与|以及|比较|哪个|之前|之后|同时|然后|分别",
    re.I,
)


# Digits, blanked when two failures are compared (_track_futility).
_DIGITS_RE = re.compile(r"\d+")


class PolicyError(ValueError):
    """A policy that does not validate; ``field`` names the offending field."""

    def __init__(self, field_name: str, problem: str) -> None:
        super().__init__(f"policy field '{field_name}': {problem}")
        self.field = field_name
        self.problem = problem  # apart, so a page can say it in its language (runs.core.error_text)


@dataclass(frozen=True)
class Thresholds:
    repetition_similarity: float = REPETITION_SIMILARITY
    novelty_min: float = NOVELTY_MIN
    off_topic_min_overlap: float = OFF_TOPIC_MIN_OVERLAP
    junk_markup_ratio: float = JUNK_MARKUP_RATIO
    junk_boilerplate_ratio: float = JUNK_BOILERPLATE_RATIO
    drift_min_gain: float = DRIFT_MIN_GAIN
    min_content_tokens: int = MIN_CONTENT_TOKENS
    off_topic_min_arg_tokens: int = OFF_TOPIC_MIN_ARG_TOKENS
    repetition_min_repeats: int = REPETITION_MIN_REPEATS


@dataclass(frozen=True)
class Windows:
    repetition: int = REPETITION_WINDOW
    stagnation: int = STAGNATION_K
    invalid_run: int = INVALID_RUN
    drift_every: int = DRIFT_CHECK_EVERY
    drift_patience: int = DRIFT_PATIENCE


@dataclass(frozen=True)
class Ladder:
    tiers: tuple[str, ...] = TIERS
    cooldown: int = COOLDOWN
    stop_streak: int = STOP_STREAK
    reset_after: int = RESET_AFTER
    stop_futile: int = STOP_FUTILE
    stop_invalid: int = STOP_INVALID
    fast_futile: int = FAST_FUTILE
    ignored_within: int = IGNORED_WITHIN
    ignored_stop: int = IGNORED_STOP
    stop_repeat: int = STOP_REPEAT
    stop_in_a_row: int = STOP_IN_A_ROW


# Fraction fields (0..1) and the minimum of each integer field, for validation.
_FRACTIONS = {f.name for f in fields(Thresholds) if f.type in ("float", float)}
_INT_MIN = {
    "min_content_tokens": 0,
    "off_topic_min_arg_tokens": 1,
    "repetition_min_repeats": 1,
    "repetition": 1,
    "stagnation": 1,
    "invalid_run": 1,
    "drift_every": 1,
    "drift_patience": 1,
    "cooldown": 0,
    "stop_streak": 1,
    "reset_after": 1,
    "stop_futile": 1,
    "stop_invalid": 1,
    "fast_futile": 0,
    "ignored_within": 0,
    "ignored_stop": 0,
    "stop_repeat": 0,
    "stop_in_a_row": 0,
}


@dataclass(frozen=True)
class Policy:
    name: str = "default"
    version: int = 1
    enabled: bool = True
    thresholds: Thresholds = field(default_factory=Thresholds)
    windows: Windows = field(default_factory=Windows)
    ladder: Ladder = field(default_factory=Ladder)
    # Scale patience windows by the goal's estimated complexity.
    use_complexity: bool = True
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ladder"]["tiers"] = list(self.ladder.tiers)
        return data

    @classmethod
    def from_dict(cls, obj: Any) -> Policy:
        """Build and validate; raises PolicyError naming the first bad field.

        Missing fields take the defaults, so ``{"name": "x", "windows":
        {"stagnation": 6}}`` is a complete policy.
        """
        if not isinstance(obj, dict):
            raise PolicyError("(root)", "a policy must be a JSON object")
        known = {f.name for f in fields(cls)}
        for key in obj:
            if key not in known:
                raise PolicyError(str(key), "unknown field")
        kwargs: dict[str, Any] = {}
        if "name" in obj:
            if not isinstance(obj["name"], str) or not obj["name"].strip():
                raise PolicyError("name", "must be a non-empty string")
            kwargs["name"] = obj["name"].strip()
        if "version" in obj:
            kwargs["version"] = _int(obj["version"], "version", 1)
        for key in ("enabled", "use_complexity"):
            if key in obj:
                if not isinstance(obj[key], bool):
                    raise PolicyError(key, "must be true or false")
                kwargs[key] = obj[key]
        if "description" in obj:
            if not isinstance(obj["description"], str):
                raise PolicyError("description", "must be a string")
            kwargs["description"] = obj["description"]
        kwargs["thresholds"] = _section(Thresholds, obj.get("thresholds"), "thresholds")
        kwargs["windows"] = _section(Windows, obj.get("windows"), "windows")
        kwargs["ladder"] = _section(Ladder, obj.get("ladder"), "ladder")
        return cls(**kwargs)


# No count or window needs more; it is also what a Postgres integer holds
# (a policy's version is one).
MAX_SETTING = 2**31 - 1


def _int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise PolicyError(name, "must be an integer")
    if value < minimum:
        raise PolicyError(name, f"must be >= {minimum}")
    if value > MAX_SETTING:
        raise PolicyError(name, f"must be <= {MAX_SETTING:,}")
    return value


def _section(kind: type, raw: Any, prefix: str) -> Any:
    if raw is None:
        return kind()
    if not isinstance(raw, dict):
        raise PolicyError(prefix, "must be an object")
    names = {f.name for f in fields(kind)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        path = f"{prefix}.{key}"
        if key not in names:
            raise PolicyError(path, "unknown field")
        if key == "tiers":
            values[key] = _tiers(value, path)
        elif key in _FRACTIONS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise PolicyError(path, "must be a number")
            if not 0.0 <= value <= 1.0:
                raise PolicyError(path, "must be between 0 and 1")
            values[key] = float(value)
        else:
            values[key] = _int(value, path, _INT_MIN.get(key, 0))
    return kind(**values)


def _tiers(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise PolicyError(path, "must be a non-empty list of tiers")
    if any(t not in TIERS for t in value):
        raise PolicyError(path, f"each tier must be one of {', '.join(TIERS)}")
    order = [TIERS.index(t) for t in value]
    if order != sorted(set(order)):
        raise PolicyError(path, "tiers must be distinct and in order hint, redirect, stop")
    return tuple(value)


DEFAULT_POLICY = Policy(name="default", version=1, description="hint -> redirect -> stop")
# Signals are still computed (the UI shows them), but nothing is injected.
OFF_POLICY = Policy(name="off", version=1, enabled=False, description="watchdog off: signals only")
# Never stops: for teams that want the nudges without the kill.
HINTS_ONLY_POLICY = Policy(
    name="hints-only", version=1, ladder=Ladder(tiers=("hint", "redirect")), description="no stop tier"
)
# Stops early: one hint, then a stop at the first futile repeat, three unusable
# results in a row or six turns without progress. At equal false kills it saves
# more failed-run steps than a naive "third identical call / third invalid
# result in a row" rule on ALFWorld and WebShop and about as many elsewhere
# (bench/README-detectors.md); it false-kills more than the default.
AGGRESSIVE_POLICY = Policy(
    name="aggressive",
    version=1,
    ladder=Ladder(cooldown=0, tiers=("hint", "stop"), stop_futile=1, stop_invalid=3, stop_streak=6),
    description="hint -> stop, early",
)
BUILTIN_POLICIES = {p.name: p for p in (DEFAULT_POLICY, OFF_POLICY, HINTS_ONLY_POLICY, AGGRESSIVE_POLICY)}


def estimate_complexity(goal: str) -> float:
    """A soft factor in [COMPLEXITY_MIN, COMPLEXITY_MAX]; 1.0 for a plain goal.

    More distinct terms and multi-hop markers ("which of", "both", "and")
    mean more legitimate exploration before the answer.
    """
    goal = goal or ""
    terms = len(normalize_args(goal))
    markers = len(_MULTI_HOP_RE.findall(goal[:2000]))
    factor = 0.85 + 0.02 * max(0, terms - 4) + 0.1 * min(markers, 4)
    return round(min(COMPLEXITY_MAX, max(COMPLEXITY_MIN, factor)), 2)


def _scaled(value: int, factor: float) -> int:
    return max(1, math.ceil(value * factor - 1e-9))


@dataclass
class _Watch:
    """The loop an intervention was about, judged on the model's next calls."""

    calls: frozenset[int]
    trigger: _Trigger
    left: int  # calls still to judge
    # Steps of the interventions about this loop so far, this one last: if
    # this one is ignored too, all of them were.
    chain: tuple[int, ...]

    @property
    def step(self) -> int:
        return self.chain[-1]


@dataclass
class _Trigger:
    detector: str
    scores: dict[str, Any]
    steps: list[int]
    detail: dict[str, Any] = field(default_factory=dict)
    # The threshold that decided: its policy field, the effective value used
    # (after complexity scaling) and the score that met it. Recorded in the
    # evidence so reviews and what-if read the rule, never rebuild it.
    threshold: dict[str, Any] = field(default_factory=dict)


def _replace_steps(trig: _Trigger, steps: list[int]) -> _Trigger:
    return _Trigger(trig.detector, trig.scores, steps, trig.detail, trig.threshold)


def _threshold(name: str, value: float, score: float, op: str = ">=") -> dict[str, Any]:
    return {"name": name, "value": value, "score": score, "op": op}


def _watch_dict(watch: _Watch | None) -> dict[str, Any] | None:
    if watch is None:
        return None
    return {"calls": sorted(watch.calls), "trigger": asdict(watch.trigger), "left": watch.left,
            "chain": list(watch.chain)}


def _watch_of(data: dict[str, Any] | None) -> _Watch | None:
    if data is None:
        return None
    return _Watch(calls=frozenset(data["calls"]), trigger=_Trigger(**data["trigger"]), left=data["left"],
                  chain=tuple(data["chain"]))


class RunMemory(SeenFeatures):
    """What a watchdog remembers for the whole run, growing with it: the
    features observed (novelty) and, per valid result, the first call that
    returned it (a confirmed value, STOP_FUTILE's comment). Everything else a
    watchdog keeps is bounded (``Watchdog.snapshot``). In memory here; the step
    API's guard keeps it in Postgres (tracing.store.guard)."""

    def __init__(self) -> None:
        super().__init__()
        self.sources: dict[int, int] = {}

    def first_source(self, value: int, call: int) -> int:
        """The call that first returned ``value`` (digests), ``call`` if none did."""
        return self.sources.setdefault(value, call)


# Version of Watchdog.snapshot()'s layout: a snapshot of another version is
# refused by restore (the caller replays the run instead).
SNAPSHOT_VERSION = 1


class Watchdog:
    """Feed every step in order; get back the intervention to inject, if any."""

    def __init__(self, policy: Policy = DEFAULT_POLICY, goal: str = "", context: dict[str, Any] | None = None,
                 memory: RunMemory | None = None) -> None:
        self.policy = policy
        self.memory = memory if memory is not None else RunMemory()
        self.goal = goal or ""
        self.context = context or {}
        th, win, lad = policy.thresholds, policy.windows, policy.ladder
        self.complexity = estimate_complexity(self.goal) if policy.use_complexity else 1.0
        f = self.complexity
        self.stagnation_k = _scaled(win.stagnation, f)
        self.invalid_run = _scaled(win.invalid_run, f)
        self.stop_streak = _scaled(lad.stop_streak, f)
        self.stop_invalid = _scaled(lad.stop_invalid, f)
        self.stop_futile = lad.stop_futile
        self.cooldown = lad.cooldown
        self.repetition = RepetitionDetector(window=win.repetition, threshold=th.repetition_similarity)
        self.observation = ObservationDetector(
            junk_markup_ratio=th.junk_markup_ratio,
            junk_boilerplate_ratio=th.junk_boilerplate_ratio,
            min_content_tokens=th.min_content_tokens,
            off_topic_min_overlap=th.off_topic_min_overlap,
            off_topic_min_arg_tokens=th.off_topic_min_arg_tokens,
            novelty_min=th.novelty_min,
            seen=self.memory,
        )
        self.stagnation = StagnationDetector(k=self.stagnation_k)
        self.drift = DriftDetector(
            goal=self.goal,
            every=win.drift_every,
            patience=_scaled(win.drift_patience, f),
            min_gain=th.drift_min_gain,
        )
        self.signals: dict[int, dict[str, Any]] = {}
        self.interventions: list[tuple[int, Intervention]] = []
        self.errors: list[tuple[int, str, str]] = []
        self.stopped = False
        self.level = 0  # next rung of the ladder
        self._since = 1 << 30  # observations since the last intervention
        self._progress_run = 0
        self._pending_rep: RepetitionSignal | None = None
        self._invalid: deque[tuple[int, str]] = deque(maxlen=max(1, self.invalid_run))
        self._invalid_run = 0
        self._drift_level = 0
        self._hint_step: int | None = None
        self._redirect_step: int | None = None
        self._obs_seen: dict[int, ObservationSignal] = {}
        # Futile repeats: each (call, result) pair with the turn it was last
        # seen at, the turn of the latest effective result, and the count.
        self._turn = 0
        # Calls are compared by the digest of their signature (call_signature).
        self._action_keys: dict[int, int] = {}
        # (call, digest of its result) -> the turn the pair was last seen at.
        self._pairs: dict[tuple[int, int], int] = {}
        self._effective_turn = -1
        self._effective_step = -1
        # Action index -> index of the result that answered it.
        self._answered_at: dict[int, int] = {}
        self.futile = 0
        self._futile_steps: list[int] = []
        # Fast lane: call -> (its futile repeats with an unusable result, the
        # step of the first of them), since the last progress.
        self._dead_calls: dict[int, tuple[int, int]] = {}
        # STOP_REPEAT: call -> (times made in the run, step of the first time).
        self._repeats: dict[int, tuple[int, int]] = {}
        # STOP_IN_A_ROW: the latest call, how many times in a row, and the step of the first.
        self._in_a_row: tuple[int, int, int] | None = None
        # Ignored interventions (IGNORED_WITHIN): the loop's latest turns without
        # progress as (call, result) hashes, the loop an intervention was about,
        # and whether this turn went on with it.
        self._loop: deque[int] = deque(maxlen=win.repetition)
        self._watch: _Watch | None = None
        self._ignored: _Watch | None = None

    # -- public ------------------------------------------------------------
    def observe(self, step: Step) -> Intervention | None:
        sig = self.signals.setdefault(step.index, {})
        if step.kind == "intervention":
            return None  # our own words (already counted when we emitted them)
        if self.stopped:
            return None
        triggers: list[_Trigger] = []
        obs_sig: ObservationSignal | None = None

        if step.kind == "action":
            self._action_keys[step.index] = stable_digest("\x00".join(call_signature(step.tool, args_of(step))))
            iv = self._dead_call(step) or self._repeated_call(step)
            if iv is not None:
                return iv
        rep = self._run("repetition", step, sig, self.repetition.update, step)
        if rep is not None:
            sig.update(rep.as_dict())
            self._pending_rep = rep if rep.flag else None

        obs_sig = self._run("observation", step, sig, self.observation.update, step)
        turn_done = False
        if obs_sig is not None and obs_sig.obs_class in NEUTRAL_CLASSES:
            sig.update(obs_sig.as_dict())  # a system note: no turn of the agent's
        elif obs_sig is not None:
            sig.update(obs_sig.as_dict())
            turn_done = True
            progress = obs_sig.progress
            self._track_futility(obs_sig, sig, step)
        elif step.kind == "error":
            turn_done = True
            progress = False
        if turn_done:
            st = self._run("stagnation", step, sig, self.stagnation.update, step.index, progress)
            if st is not None:
                sig.update(st.as_dict())
            self._since += 1
            self._progress_run = self._progress_run + 1 if progress else 0
            if self._progress_run >= self.policy.ladder.reset_after:
                self.level = 0
            triggers.extend(self._turn_triggers(step, obs_sig, progress))

        dr = self._run("drift", step, sig, self.drift.update, step, obs_sig.toks if obs_sig else None)
        if dr is not None:
            sig.update(dr.as_dict())
            # Flagged at every stalled checkpoint; acted on every `patience`
            # checkpoints so a long stall gets a hint, later a redirect, not a stream.
            if dr.flag and dr.checkpoint.stalled % self.drift.patience == 0:
                triggers.append(self._drift_trigger(dr))
        if obs_sig is not None and self.drift.terms:
            sig["coverage"] = round(self.drift.coverage, 3)

        ignored, self._ignored = self._ignored, None
        if ignored is not None:
            sig["ignored"] = ignored.step
            if not any(t.detector != "drift" for t in triggers):
                triggers.insert(0, _replace_steps(ignored.trigger, [ignored.step, step.index]))
        if triggers:
            sig["triggers"] = [t.detector for t in triggers]
        if not triggers or not self.policy.enabled:
            return None
        return self._escalate(step, triggers, ignored)

    def snapshot(self) -> dict[str, Any]:
        """Everything this watchdog needs to go on, as plain JSON, bounded in
        size: the run memory (RunMemory) is kept apart, the per-step signals
        and the interventions already given are not kept, and what can no
        longer matter is left out (a (call, result) pair older than the last
        progress counts as unseen; only actions still waiting for a result
        have a call key; only calls the repetition window can compare with
        have an answer). ``restore`` of it, with the same memory, answers the
        next steps exactly as this watchdog would."""
        rep, obs, drift = self.repetition, self.observation, self.drift
        waiting = {p[0] for p in obs._pending}
        comparable = {i for past in rep._history.values() for i, _ in past}
        if self._pending_rep is not None and self._pending_rep.compared_step is not None:
            comparable.add(self._pending_rep.compared_step)
        return {
            "version": SNAPSHOT_VERSION,
            "repetition": [[tool, [[i, sorted(toks)] for i, toks in past]] for tool, past in rep._history.items()],
            "pending": [[i, tool, args, sorted(toks)] for i, tool, args, toks in obs._pending],
            "stagnation": [self.stagnation.streak, self.stagnation.since_step],
            "drift": {
                "obtained": sorted(drift.obtained),
                "checkpoints": [asdict(cp) for cp in drift.checkpoints[-(drift.patience + 1):]],
                "count": drift._count, "stalled": drift._stalled, "prev_coverage": drift._prev_coverage,
                "prev_missing": drift._prev_missing, "last_thought": drift._last_thought,
                "recent_actions": list(drift._recent_actions),
            },
            "stopped": self.stopped, "level": self.level, "since": self._since, "progress_run": self._progress_run,
            "pending_rep": asdict(self._pending_rep) if self._pending_rep is not None else None,
            "invalid": [list(item) for item in self._invalid], "invalid_run": self._invalid_run,
            "drift_level": self._drift_level, "hint_step": self._hint_step, "redirect_step": self._redirect_step,
            "turn": self._turn,
            "action_keys": [[i, k] for i, k in self._action_keys.items() if i in waiting],
            "pairs": [[c, r, t] for (c, r), t in self._pairs.items() if t >= self._effective_turn],
            "effective_turn": self._effective_turn, "effective_step": self._effective_step,
            "answered_at": [[a, o] for a, o in self._answered_at.items() if a in comparable],
            "futile": self.futile, "futile_steps": self._futile_steps[-4:],
            "dead_calls": [[k, c, since] for k, (c, since) in self._dead_calls.items()],
            "repeats": [[k, c, first] for k, (c, first) in self._repeats.items()],
            "in_a_row": list(self._in_a_row) if self._in_a_row else None,
            "loop": list(self._loop),
            "watch": _watch_dict(self._watch), "ignored": _watch_dict(self._ignored),
        }

    @classmethod
    def restore(cls, state: dict[str, Any], policy: Policy = DEFAULT_POLICY, goal: str = "",
                context: dict[str, Any] | None = None, memory: RunMemory | None = None) -> Watchdog:
        """A watchdog that goes on from ``snapshot()``'s state (same policy,
        goal and memory as the one that took it). ValueError on a snapshot of
        another layout version."""
        if state.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"watchdog snapshot version {state.get('version')!r}, expected {SNAPSHOT_VERSION}")
        wd = cls(policy, goal=goal, context=context, memory=memory)
        rep, obs, drift = wd.repetition, wd.observation, wd.drift
        for tool, past in state["repetition"]:
            rep._history[tool] = deque(((i, frozenset(toks)) for i, toks in past), maxlen=max(1, rep.window))
        obs._pending = deque((i, tool, args, frozenset(toks)) for i, tool, args, toks in state["pending"])
        wd.stagnation.streak, wd.stagnation.since_step = state["stagnation"]
        d = state["drift"]
        drift.obtained = set(d["obtained"])
        drift.checkpoints = [Checkpoint(**cp) for cp in d["checkpoints"]]
        drift._count, drift._stalled, drift._prev_coverage = d["count"], d["stalled"], d["prev_coverage"]
        drift._prev_missing, drift._last_thought = d["prev_missing"], d["last_thought"]
        drift._recent_actions.extend(d["recent_actions"])
        wd.stopped, wd.level, wd._since, wd._progress_run = (state["stopped"], state["level"], state["since"],
                                                              state["progress_run"])
        wd._pending_rep = RepetitionSignal(**state["pending_rep"]) if state["pending_rep"] else None
        wd._invalid.extend(tuple(item) for item in state["invalid"])
        wd._invalid_run, wd._drift_level = state["invalid_run"], state["drift_level"]
        wd._hint_step, wd._redirect_step, wd._turn = state["hint_step"], state["redirect_step"], state["turn"]
        wd._action_keys = dict(state["action_keys"])
        wd._pairs = {(c, r): t for c, r, t in state["pairs"]}
        wd._effective_turn, wd._effective_step = state["effective_turn"], state["effective_step"]
        wd._answered_at = dict(state["answered_at"])
        wd.futile, wd._futile_steps = state["futile"], list(state["futile_steps"])
        wd._dead_calls = {k: (c, since) for k, c, since in state["dead_calls"]}
        wd._repeats = {k: (c, first) for k, c, first in state.get("repeats", [])}
        wd._in_a_row = tuple(state["in_a_row"]) if state.get("in_a_row") else None
        wd._loop.extend(state["loop"])
        wd._watch, wd._ignored = _watch_of(state["watch"]), _watch_of(state["ignored"])
        return wd

    # -- internals -----------------------------------------------------------
    def _track_futility(self, obs: ObservationSignal, sig: dict[str, Any], step: Step) -> None:
        self._turn += 1
        if obs.progress:
            self._effective_turn = self._turn
            self._effective_step = obs.step
            self.futile = 0
            self._futile_steps = []
            self._dead_calls.clear()
            self._loop.clear()
            self._watch = None
        if obs.obs_class == "user" or obs.action_step is None:
            return
        self._answered_at[obs.action_step] = obs.step
        key = self._action_keys.pop(obs.action_step, None)
        if key is None:
            return
        seen = " ".join(obs.toks[:400])
        if obs.bad:
            # A failure is the same failure whatever counters it carries (the
            # interpreter's cell number, "You have 3 steps left"): its digits are
            # blanked. A valid result keeps them: there they are the data.
            seen = _DIGITS_RE.sub("#", seen)
        pair = (key, stable_digest(seen))
        previous = self._pairs.get(pair)
        self._pairs[pair] = self._turn
        confirmed = False
        if not obs.bad:
            text = step.text if isinstance(step.text, str) else str(step.text or "")
            # A value another call already returned: confirmed, not futile.
            confirmed = self.memory.first_source(stable_digest(text[:ANALYSIS_CHARS].strip()), key) != key
        if not obs.progress:
            self._judge_course(key, going_on=not confirmed)
            self._loop.append(key)
        if confirmed:
            return
        if previous is None or obs.progress or previous < self._effective_turn:
            self._dead_calls.pop(key, None)  # the call got something else this time
            return
        self.futile += 1
        self._futile_steps.append(obs.action_step)
        sig["futile"] = self.futile
        if obs.obs_class in FAST_LANE_CLASSES:
            count, since = self._dead_calls.get(key, (0, obs.step))
            self._dead_calls[key] = (count + 1, since)
        else:
            self._dead_calls.pop(key, None)

    def _judge_course(self, key: int, *, going_on: bool) -> None:
        """After an intervention: did this call go on with its loop (IGNORED_WITHIN)?"""
        watch = self._watch
        if watch is None:
            return
        if going_on and key in watch.calls:
            self._ignored, self._watch = watch, None
            return
        watch.left -= 1  # changed course: the level stays
        if watch.left <= 0:
            self._watch = None

    def _dead_call(self, step: Step) -> Intervention | None:
        """The fast lane: a stop at a call that is a dead loop's next try (FAST_FUTILE)."""
        lad = self.policy.ladder
        if not lad.fast_futile or not self.policy.enabled or "stop" not in lad.tiers:
            return None
        key = self._action_keys[step.index]
        count, since = self._dead_calls.get(key, (0, -1))
        # The lane is the shortcut from a hint to a stop: the hint must be about
        # this loop (given at or after its first futile repeat). Once the ladder
        # has redirected since, its own stop grounds apply.
        if count < lad.fast_futile or self._hint_step is None or self._hint_step < since:
            return None
        trig = _Trigger(
            "repetition",
            {"similarity": 1.0, "repeats": count + 1, "novelty": 0.0, "obs_class": "dead loop"},
            [since, step.index],
            {"tool": step.tool, "args": args_preview(args_of(step)), "compared_step": since},
        )
        threshold = _threshold("ladder.fast_futile", lad.fast_futile, count)
        return self._emit(step, trig, "stop", [trig], advance=True, stop_threshold=threshold)

    def _repeated_call(self, step: Step) -> Intervention | None:
        """A stop at the STOP_REPEAT-th identical call of the run, or the
        STOP_IN_A_ROW-th in a row, once a hint was given since its first."""
        lad = self.policy.ladder
        if not lad.stop_repeat and not lad.stop_in_a_row:
            return None  # off: nothing counted, nothing in the snapshot
        key = self._action_keys[step.index]
        count, first = self._repeats.pop(key, (0, step.index))
        if lad.stop_repeat:
            self._repeats[key] = (count + 1, first)  # re-inserted: the most recent keys are kept
            if len(self._repeats) > REPEAT_KEYS_MAX:
                del self._repeats[next(iter(self._repeats))]
        row_key, row, row_first = self._in_a_row or (None, 0, step.index)
        if row_key != key:
            row, row_first = 0, step.index
        self._in_a_row = (key, row + 1, row_first) if lad.stop_in_a_row else None
        if lad.stop_repeat and count + 1 >= lad.stop_repeat:
            name, made, first = "ladder.stop_repeat", count + 1, first
        elif lad.stop_in_a_row and row + 1 >= lad.stop_in_a_row:
            name, made, first = "ladder.stop_in_a_row", row + 1, row_first
        else:
            return None
        if not self.policy.enabled or "stop" not in lad.tiers:
            return None
        if "hint" in lad.tiers and (self._hint_step is None or self._hint_step < first):
            return None  # never a stop without a word first
        trig = _Trigger(
            "repetition",
            {"similarity": 1.0, "repeats": made, "novelty": 0.0, "obs_class": "repeated call"},
            [first, step.index],
            {"tool": step.tool, "args": args_preview(args_of(step)), "compared_step": first},
        )
        threshold = _threshold(name, getattr(lad, name.split(".")[1]), made)
        return self._emit(step, trig, "stop", [trig], advance=True, stop_threshold=threshold)

    def _run(self, name: str, step: Step, sig: dict[str, Any], fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 -- a broken detector must not end the run
            message = f"{type(exc).__name__}: {exc}"[:300]
            sig.setdefault("errors", {})[name] = message
            self.errors.append((step.index, name, message))
            return None

    def _turn_triggers(self, step: Step, obs: ObservationSignal | None, progress: bool) -> list[_Trigger]:
        out: list[_Trigger] = []
        rep, self._pending_rep = self._pending_rep, None
        failed = obs is None or obs.bad
        min_repeats = self.policy.thresholds.repetition_min_repeats
        # A repeat after something effective (a new result, a user's turn) is a
        # re-check (run_speed_test() after the user toggled a setting), not a loop.
        recheck = (
            rep is not None
            and rep.compared_step is not None
            and self._effective_step > self._answered_at.get(rep.compared_step, rep.compared_step)
        )
        if rep is not None and not progress and not recheck and (failed or rep.repeats >= min_repeats):
            out.append(
                _Trigger(
                    "repetition",
                    {
                        "similarity": round(rep.similarity, 3),
                        "repeats": rep.repeats,
                        "novelty": round(obs.novelty, 3) if obs else 0.0,
                        "obs_class": obs.obs_class if obs else "error",
                    },
                    [s for s in (rep.compared_step, rep.step, step.index) if s is not None],
                    {"tool": rep.tool, "args": rep.args_text, "compared_step": rep.compared_step},
                    _threshold("thresholds.repetition_similarity", self.repetition.threshold, round(rep.similarity, 3)),
                )
            )
        if failed:
            self._invalid.append((step.index, obs.obs_class if obs else "error"))
            self._invalid_run += 1
        else:
            self._invalid.clear()
            self._invalid_run = 0
        if self._invalid_run >= self.invalid_run:
            classes = [c for _, c in self._invalid]
            out.append(
                _Trigger(
                    "observation",
                    {"invalid_run": self._invalid_run, "classes": classes},
                    [i for i, _ in self._invalid],
                    threshold=_threshold("windows.invalid_run", self.invalid_run, self._invalid_run),
                )
            )
        st = self.stagnation
        if st.streak >= self.stagnation_k:
            since = st.since_step if st.since_step is not None else step.index
            out.append(
                _Trigger(
                    "stagnation",
                    {"streak": st.streak, "k": self.stagnation_k},
                    [since, step.index],
                    threshold=_threshold("windows.stagnation", self.stagnation_k, st.streak),
                )
            )
        return out

    def _drift_trigger(self, dr: DriftSignal) -> _Trigger:
        cps = self.drift.checkpoints
        compared = [cp.step for cp in cps[-(self.drift.patience + 1) :]]
        cp = dr.checkpoint
        return _Trigger(
            "drift",
            {"coverage": round(cp.coverage, 3), "missing": len(cp.missing), "stalled": cp.stalled},
            compared,
            {"checkpoint": cp.as_dict()},
            _threshold("windows.drift_patience", self.drift.patience, cp.stalled),
        )

    def _escalate(self, step: Step, triggers: list[_Trigger], ignored: _Watch | None = None) -> Intervention | None:
        tiers = self.policy.ladder.tiers
        if self._since < self.cooldown and ignored is None:
            return None
        if all(t.detector == "drift" for t in triggers):
            return self._drift_intervention(step, triggers[0])
        triggers = [t for t in triggers if t.detector != "drift"] + [t for t in triggers if t.detector == "drift"]
        tier = tiers[min(self.level, len(tiers) - 1)]
        grounds = self._grounds_to_stop(ignored)
        if tier == "stop" and grounds is None:
            # At the top of the ladder without grounds to stop: repeat the
            # redirect now and then, never kill on a hunch.
            # An ignored redirect is repeated at once when IGNORED_STOP counts it.
            at_once = ignored is not None and self.policy.ladder.ignored_stop > 0
            if (self._since < self.cooldown * REPEAT_FACTOR and not at_once) or "redirect" not in tiers:
                return None
            tier = "redirect"
        trig = triggers[0]
        if tier == "stop" and grounds is not None:
            # Name the detector that measured the grounds, not whichever fired
            # first on this step.
            trig = next((t for t in triggers if t.detector == grounds[0]), trig)
        return self._emit(
            step, trig, tier, triggers, advance=True, stop_threshold=grounds[1] if grounds else None, ignored=ignored
        )

    def _grounds_to_stop(self, ignored: _Watch | None = None) -> tuple[str, dict[str, Any]] | None:
        """(detector, threshold) that justifies a stop, or None: futile repeats,
        unusable results in a row, a long run without progress, or interventions
        ignored in a row."""
        need = self.policy.ladder.ignored_stop
        if ignored is not None and need and len(ignored.chain) >= need:
            return ignored.trigger.detector, _threshold("ladder.ignored_stop", need, len(ignored.chain))
        if ignored is not None and self._since < self.cooldown:
            return None  # inside the cooldown only the ignoring itself can ground a stop
        if self.futile >= self.stop_futile:
            return "repetition", _threshold("ladder.stop_futile", self.stop_futile, self.futile)
        if self._invalid_run >= self.stop_invalid:
            return "observation", _threshold("ladder.stop_invalid", self.stop_invalid, self._invalid_run)
        if self.stagnation.streak >= self.stop_streak:
            return "stagnation", _threshold("ladder.stop_streak", self.stop_streak, self.stagnation.streak)
        return None

    def _drift_intervention(self, step: Step, trig: _Trigger) -> Intervention | None:
        # Drift has its own short ladder, capped at redirect: it measures
        # direction, not lack of progress, so it never earns a stop and does not
        # move the main ladder (a methodical search also covers no goal terms
        # for a while; gold ALFWorld runs do).
        soft = [t for t in self.policy.ladder.tiers if t != "stop"]
        if not soft:
            return None
        tier = soft[min(self._drift_level, len(soft) - 1)]
        self._drift_level += 1
        return self._emit(step, trig, tier, [trig], advance=False)

    def _emit(
        self,
        step: Step,
        trig: _Trigger,
        tier: str,
        triggers: list[_Trigger],
        *,
        advance: bool,
        stop_threshold: dict[str, Any] | None = None,
        ignored: _Watch | None = None,
    ) -> Intervention:
        tiers = self.policy.ladder.tiers
        threshold = stop_threshold if tier == "stop" and stop_threshold else trig.threshold
        evidence = {
            "threshold": threshold,
            "detector": trig.detector,
            "scores": trig.scores,
            "steps": trig.steps,
            "policy": self.policy.name,
            "policy_version": self.policy.version,
            "complexity": self.complexity,
            "stagnation": self.stagnation.streak,
            "also": [t.detector for t in triggers if t is not trig],
            **trig.detail,
        }
        if ignored is not None:
            # The interventions about this loop that it went on after, oldest first.
            evidence["ignored"] = list(ignored.chain)
        message = _message(trig, tier, self, step, threshold, ignored.chain if ignored else ())
        if ignored is not None and tier != "stop":
            message = f"Your last call went on with the loop pointed out at step {ignored.step}. {message}"
        iv = Intervention(detector=trig.detector, tier=tier, message=message, evidence=evidence)
        self.interventions.append((step.index, iv))
        self.signals[step.index]["intervention"] = tier
        self._since = 0
        if tier == "hint":
            self._hint_step = step.index
        elif tier == "redirect":
            self._redirect_step = step.index
        if tier == "stop":
            self.stopped = True
        elif advance and self.level < len(tiers) - 1:
            self.level += 1
        if advance and tier != "stop" and self.policy.ladder.ignored_within and self._loop:
            self._watch = _Watch(
                calls=frozenset(self._loop),
                trigger=trig,
                left=self.policy.ladder.ignored_within,
                chain=(ignored.chain if ignored is not None else ()) + (step.index,),
            )
        return iv


def _message(
    trig: _Trigger,
    tier: str,
    wd: Watchdog,
    step: Step,
    threshold: dict[str, Any] | None = None,
    ignored: tuple[int, ...] = (),
) -> str:
    d, s = trig.detail, trig.scores
    if tier == "stop":
        name, score = (threshold or {}).get("name"), (threshold or {}).get("score")
        if name == "ladder.fast_futile":
            return (
                f"Stopped by the watchdog ({trig.detector}): {d.get('tool') or 'this call'} with "
                f"'{d.get('args', '')}' already got the same unusable or unchanged result {score + 1} times with nothing new "
                f"in between (repeated at step {d.get('compared_step')}), and was made again after the hint at step "
                f"{wd._hint_step}; it was stopped before it ran. Fallback: answer with the facts observed "
                "so far, marked as incomplete, or report that the goal could not be reached with the tools given."
            )
        if name in ("ladder.stop_repeat", "ladder.stop_in_a_row"):
            where = "in a row" if name == "ladder.stop_in_a_row" else "in this run"
            return (
                f"Stopped by the watchdog ({trig.detector}): {d.get('tool') or 'this call'} with "
                f"'{d.get('args', '')}' was made {score} times {where} (first at step {d.get('compared_step')}), "
                f"after the hint at step {wd._hint_step}; asked again, it cannot answer anything new. It was "
                "stopped before it ran. Fallback: answer with the facts observed so far, marked as incomplete, "
                "or report that the goal could not be reached with the tools given."
            )
        if name == "ladder.ignored_stop":
            return (
                f"Stopped by the watchdog ({trig.detector}): the interventions at steps "
                f"{', '.join(map(str, ignored))} were each followed by the same loop (a call already made "
                f"in it, with nothing new; last at step {step.index}). Fallback: answer with the facts observed "
                "so far, marked as incomplete, or report that the goal could not be reached with the tools given."
            )
        if name == "ladder.stop_futile":
            why = (
                f"calls were repeated {score} times with the same arguments and got the same unusable result, "
                f"with nothing new in between (steps {', '.join(map(str, wd._futile_steps[-4:]))})"
            )
        elif name == "ladder.stop_invalid":
            why = f"the last {score} results in a row were unusable"
        else:
            why = f"{wd.stagnation.streak} observations in a row brought nothing new"
        return (
            f"Stopped by the watchdog ({trig.detector}): {why}, after a hint at step {wd._hint_step} and a "
            f"redirect at step {wd._redirect_step}. Fallback: answer with the facts observed so far, marked as "
            "incomplete, or report that the goal could not be reached with the tools given."
        )
    if trig.detector == "repetition":
        what = f"{d.get('tool') or 'the tool'} with '{d.get('args', '')}'"
        if tier == "hint":
            return (
                f"You already called {what} at step {d.get('compared_step')} and got nothing new "
                f"(similarity {s['similarity']:.2f}, result: {s['obs_class']}). Change approach: use "
                "different keywords, a more specific name, or another tool."
            )
        return (
            f"Stop calling {what}: it was called {s['repeats'] + 1} times (latest at steps "
            f"{d.get('compared_step')} and {trig.steps[-2]}) and the last result (step "
            f"{trig.steps[-1]}) was {s['obs_class']}. Next, act on something "
            "you already observed (look up a term that appeared in an earlier result, or open a "
            "different item), or finish with what you have."
        )
    if trig.detector == "observation":
        classes = ", ".join(s["classes"])
        if tier == "hint":
            return (
                f"The last {s['invalid_run']} results were not usable ({classes}; steps "
                f"{', '.join(map(str, trig.steps))}). An empty or failed result is not evidence: "
                "check the argument format and try a different query."
            )
        return (
            f"Results keep failing ({classes}). Stop retrying the same kind of call: switch tool or "
            "target (e.g. search a broader or differently named entity, or go back to a result that "
            "worked), and if a call timed out, retry it once, do not treat it as 'not found'."
        )
    if trig.detector == "stagnation":
        first, last = trig.steps[0], trig.steps[-1]
        if tier == "hint":
            return (
                f"The last {s['streak']} observations (steps {first}-{last}) added nothing new. "
                "Write down what you know and what is still missing, then change approach."
            )
        return (
            f"No progress since step {first}. Stop the current line of enquiry; pick the single "
            "missing fact, go to the most direct source for it (a different entity, page or "
            "place than the ones tried), or finish with the best supported answer."
        )
    cp = d.get("checkpoint", {})
    missing = ", ".join(cp.get("missing", [])[:6]) or "nothing"
    goal = wd.goal[:120]
    if tier == "hint":
        return (
            f"Check the goal again: '{goal}'. Still missing: {missing}. Your recent steps "
            f"({cp.get('strategy', '')[:100]}) have not covered it since step {trig.steps[0]}."
        )
    return (
        f"Go back to the goal '{goal}': you have {cp.get('obtained', [])[:6]} but not {missing}. "
        f"Drop the current strategy and aim the next action directly at '{missing.split(', ')[0]}'."
    )
